// The viewer's answers without a server (report --format html): from the page's table of each
// sample group's weight and samples in equal spans of the recording
// (ProfileView::sample_table_json), the call trees and the timeline the server's api/tree and
// api/timeline would give for any event, filter and range (a range takes the spans it touches).
// `summary` is api/summary's answer (threads, DSOs, events).
'use strict';

// The sample groups a selection's event and filters keep (1) or leave out (0).
function tableGroups(table, summary, params) {
  const event = Number(params.get('event') || 0);
  const { threads, dsos, events } = summary;
  // wall-time holds the on-CPU clock's samples and the off-CPU ones.
  const ofEvent = (other) => other === event || (events[event].wall && events[other].in_wall);
  const comm = params.get('comm'), dso = params.get('dso');
  const pid = params.has('pid') ? Number(params.get('pid')) : null;
  const tid = params.has('tid') ? Number(params.get('tid')) : null;
  const groups = table.groups;
  const selected = new Uint8Array(groups.length / 4);
  for (let g = 0; g < selected.length; ++g) {
    if (!ofEvent(groups[4 * g + 2])) continue;
    const thread = threads[groups[4 * g + 1]];
    if ((pid !== null && thread.pid !== pid) || (tid !== null && thread.tid !== tid)) continue;
    if (comm !== null && thread.comm !== comm) continue;
    if (dso !== null) {
      const stack = groups[4 * g];
      if (stack < 0) continue;
      const leafDso = table.functions[table.stacks[2 * stack + 1]][1];
      if (leafDso < 0 || dsos[leafDso] !== dso) continue;
    }
    selected[g] = 1;
  }
  return selected;
}

// The first and last span a selection's time range touches.
function tableSpans(table, params) {
  const width = (table.to - table.from) / table.buckets;
  let first = 0, last = table.buckets - 1;
  if (params.has('from')) first = Math.max(0, Math.floor((Number(params.get('from')) - table.from) / width));
  if (params.has('to')) last = Math.min(last, Math.ceil((Number(params.get('to')) - table.from) / width) - 1);
  return [first, last];
}

// The call tree of a selection, as the server's api/tree answers it.
function tableTree(table, summary, params, inverted) {
  const selected = tableGroups(table, summary, params);
  const [first, last] = tableSpans(table, params);
  const stackWeight = new Map();
  let samples = 0, unstacked = 0;
  const cells = table.cells;
  for (let i = 0; i < cells.length; i += 4) {
    if (cells[i] < first || cells[i] > last || !selected[cells[i + 1]]) continue;
    samples += cells[i + 3];
    const stack = table.groups[4 * cells[i + 1]];
    if (stack < 0) unstacked += cells[i + 2];
    else stackWeight.set(stack, (stackWeight.get(stack) || 0) + cells[i + 2]);
  }
  const root = { fn: -1, total: 0, self: 0, children: new Map() };
  const add = (path, weight) => {
    let node = root;
    node.total += weight;
    for (const fn of path) {
      let child = node.children.get(fn);
      if (!child) node.children.set(fn, child = { fn, total: 0, self: 0, children: new Map() });
      child.total += weight;
      node = child;
    }
    node.self += weight;
  };
  for (const [stack, weight] of [...stackWeight].sort((a, b) => a[0] - b[0])) {
    const path = [];
    for (let s = stack; s >= 0; s = table.stacks[2 * s]) path.push(table.stacks[2 * s + 1]);
    if (!inverted) path.reverse();
    add(path, weight);
  }
  if (unstacked) add([], unstacked);
  const least = Math.floor(0.0005 * root.total);
  let pruned = 0;
  const answer = (node) => {
    const fn = node.fn < 0 ? null : table.functions[node.fn];
    const kept = [];
    let other = 0;  // the pruned children together: the last child, "(other)", as the server's
    for (const child of node.children.values()) {
      if (child.total >= least && child.total !== 0) kept.push(child); else { ++pruned; other += child.total; }
    }
    kept.sort((a, b) => b.total - a.total);
    const children = kept.map(answer);
    if (other) children.push({ name: '(other)', dso: '', other: true, total: other, self: other, children: [] });
    return {
      name: fn ? fn[0] : 'all',
      dso: fn ? (fn[1] < 0 ? '[unknown]' : summary.dsos[fn[1]]) : '',
      total: node.total, self: node.self, children,
    };
  };
  const tree = answer(root);
  return { weight: root.total, samples, root: tree, pruned };
}

// The threads' lanes over the whole recording, as the server's api/timeline answers it.
function tableTimeline(table, summary, params) {
  const selected = tableGroups(table, summary, params);
  const selectedEvent = summary.events[Number(params.get('event') || 0)];
  const offCpu = selectedEvent.off_cpu || selectedEvent.wall;
  const lanes = new Map();
  const cells = table.cells;
  for (let i = 0; i < cells.length; i += 4) {
    const group = cells[i + 1];
    if (!selected[group]) continue;
    const thread = table.groups[4 * group + 1];
    let lane = lanes.get(thread);
    if (!lane) lanes.set(thread, lane = { weight: 0, lane: new Array(table.buckets).fill(0), states: {} });
    lane.weight += cells[i + 2];
    lane.lane[cells[i]] += cells[i + 2];
    if (offCpu) {
      const state = table.groups[4 * group + 3];
      if (!lane.states[state]) lane.states[state] = new Array(table.buckets).fill(0);
      lane.states[state][cells[i]] += cells[i + 2];
    }
  }
  const threads = [...lanes].sort((a, b) => b[1].weight - a[1].weight || a[0] - b[0]).slice(0, 64)
    .map(([index, lane]) => {
      const { pid, tid, comm } = summary.threads[index];
      return { pid, tid, comm, ...lane };
    });
  return { from: table.from, to: table.to, buckets: table.buckets, threads };
}
