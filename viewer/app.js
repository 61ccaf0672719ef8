// perfscope view: the browser side. Asks the server (ProfileView's API) for what the views show
// and draws it; the address's #hash holds the state, so a link reopens the same view. Every name
// from the recording goes into the page as text (textContent), never as markup.
'use strict';

const state = {
  event: 0, from: null, to: null, comm: '', pid: '', tid: '', dso: '',
  view: 'flame', zoom: [], search: '', expanded: new Set(), sort: 'total', fn: '',
};
let selectedNode = null;  // the frame or row focused last: "Function details" opens it
let summary = null;
let timeline = null;
let tree = null;        // top-down, for the flame and icicle graphs and the call tree
let bottomUp = null;    // bottom-up tree
let files = null;       // {base, current}: current is null without a second recording
let diff = null;        // {base, current, table} for the diff view
let diffTree = null;    // the two trees merged: the differential flame graph
let renders = 0;
let requestNumber = 0;

const $ = (id) => document.getElementById(id);

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const number = (key) => (params.has(key) && params.get(key) !== '' ? Number(params.get(key)) : null);
  state.event = number('e') ?? 0;
  state.from = number('from');
  state.to = number('to');
  state.comm = params.get('comm') || '';
  state.pid = params.get('pid') || '';
  state.tid = params.get('tid') || '';
  state.dso = params.get('dso') || '';
  state.view = ['flame', 'icicle', 'tree', 'bottomup', 'diff', 'stack'].includes(params.get('v')) ? params.get('v') : 'flame';
  state.zoom = params.get('z') ? params.get('z').split('\u001f') : [];
  state.search = params.get('q') || '';
  state.fn = params.get('fn') || '';
}

function writeHash() {
  const params = new URLSearchParams();
  params.set('e', state.event);
  if (state.from !== null) params.set('from', state.from);
  if (state.to !== null) params.set('to', state.to);
  for (const key of ['comm', 'pid', 'tid', 'dso']) if (state[key]) params.set(key, state[key]);
  params.set('v', state.view);
  if (state.zoom.length) params.set('z', state.zoom.join('\u001f'));
  if (state.search) params.set('q', state.search);
  if (state.fn) params.set('fn', state.fn);
  const hash = '#' + params.toString();
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

function selectionQuery(withRange) {
  const params = new URLSearchParams();
  params.set('event', state.event);
  if (withRange && state.from !== null) params.set('from', state.from);
  if (withRange && state.to !== null) params.set('to', state.to);
  for (const key of ['comm', 'pid', 'tid', 'dso']) if (state[key] !== '') params.set(key, state[key]);
  return params.toString();
}

// report --format html puts the recording into the page itself: its sample groups' weights in
// spans of time (the table), from which the page answers every question the server would, a
// range rounded out to whole spans; or, where the recording was too varied for that, the
// whole recording's answers alone.
const embedded = (() => {
  const element = document.getElementById('embedded-profile');
  return element ? JSON.parse(element.textContent) : null;
})();
const embeddedTable = embedded && embedded.table && embedded.table.cells ? embedded.table : null;

function embeddedAnswer(name, params) {
  const event = embedded.events[Number(params.get('event') || 0)];
  if (!event) throw new Error('no such event');
  const narrowed = ['from', 'to', 'comm', 'pid', 'tid', 'dso'].some((key) => params.has(key));
  if (narrowed && !embeddedTable && name !== 'function') {
    throw new Error('this page holds the whole recording\'s answers only (the recording was too ' +
                    'varied to carry its samples\' times): a time range or a filter needs ' +
                    '`perfscope view` on the recording itself');
  }
  switch (name) {
    case 'summary': return embedded.summary;
    case 'files': return embedded.files;
    case 'timeline': return embeddedTable ? tableTimeline(embeddedTable, embedded.summary, params) : event.timeline;
    case 'tree': {
      const inverted = params.get('invert') === '1';
      if (embeddedTable) return tableTree(embeddedTable, embedded.summary, params, inverted);
      return inverted ? event.bottom_up : event.tree;
    }
    case 'function': {
      const wanted = params.get('name');
      const found = event.functions && event.functions.functions.find((fn) => fn.name === wanted);
      if (!found) {
        throw new Error(`this page carries the code of each event's ${embedded.annotated} hottest ` +
                        'functions (of at least 0.5 % of its samples each), and ' +
                        `${wanted} is not among them: \`perfscope annotate\` or ` +
                        '`perfscope view` on the recording show it');
      }
      return { ...event.functions, functions: [found], whole_recording: true };
    }
    default: throw new Error(`${name} needs \`perfscope view\` on the recording`);
  }
}

async function api(name, query) {
  if (embedded) return embeddedAnswer(name, new URLSearchParams(query));
  const response = await fetch(`api/${name}?${query}`);
  const text = await response.text();
  if (!response.ok) throw new Error(text.trim());
  return JSON.parse(text);
}

function percent(part, whole) {
  return whole > 0 ? (100 * part / whole).toFixed(2) + ' %' : '0 %';
}

// ---- loading ----

async function load() {
  const number = ++requestNumber;
  $('status').textContent = '';
  try {
    const [newTimeline, newTree, newBottomUp] = await Promise.all([
      api('timeline', selectionQuery(false) + '&buckets=400'),
      api('tree', selectionQuery(true)),
      api('tree', selectionQuery(true) + '&invert=1'),
    ]);
    const newDiff = files && files.current ? await api('diff', selectionQuery(true)) : null;
    if (number !== requestNumber) return;  // a newer selection is on its way
    timeline = newTimeline;
    tree = newTree;
    bottomUp = newBottomUp;
    diff = newDiff;
    diffTree = diff ? mergeTrees(diff.base, diff.current) : null;
    render();
    // The function pane follows the range, event and filters.
    if (state.fn) openFunction(state.fn, false);
  } catch (error) {
    $('status').textContent = `The viewer's server answered: ${error.message}`;
  }
}

// Data-quality warnings stay on screen (hovering a frame does not replace them): a file without
// symbols is named with the share of the selection's samples taken in it, the largest first.
function renderWarnings() {
  const box = $('warnings');
  box.replaceChildren();
  if (!summary || !summary.warnings.length) { box.hidden = true; return; }
  const inFile = new Map();
  if (bottomUp) {
    for (const node of bottomUp.root.children) inFile.set(node.dso, (inFile.get(node.dso) || 0) + node.total);
  }
  const weight = bottomUp ? bottomUp.weight : 0;
  const entries = summary.warnings.map((text) => {
    const file = text.split(' ')[0];
    return { text, part: inFile.get(file) || 0, named: inFile.has(file) };
  });
  entries.sort((a, b) => b.part - a.part);
  for (const entry of entries) {
    const line = document.createElement('div');
    line.textContent = (entry.named ? `${percent(entry.part, weight)} of the samples: ` : '') + entry.text;
    line.dataset.share = String(weight > 0 ? entry.part / weight : 0);
    box.append(line);
  }
  box.hidden = false;
}

function render() {
  renderWarnings();
  writeHash();
  renderTabs();
  renderTimeline();
  $('diff-pane').hidden = state.view !== 'diff';
  $('stack-chart-box').hidden = state.view !== 'stack';
  if (state.view === 'stack') {
    $('graph').hidden = true;
    $('calltree').hidden = true;
    loadStackChart();
  } else if (state.view === 'diff' && diffTree) {
    $('graph').hidden = false;
    $('calltree').hidden = true;
    renderGraph(diffTree);
    renderDiffTable();
  } else if (state.view === 'flame' || state.view === 'icicle' || state.view === 'diff') {
    $('graph').hidden = false;
    $('calltree').hidden = true;
    renderGraph();
  } else {
    $('graph').hidden = true;
    $('calltree').hidden = false;
    renderCallTree();
  }
  $('graph-scroll').hidden = $('graph').hidden;  // no empty box above the tables and charts
  renderSearch();
  renderFunctionCallers();
  document.body.dataset.renders = String(++renders);
}

// ---- timeline ----

function timeOf(fraction) {
  return Math.round(timeline.from + fraction * (timeline.to - timeline.from));
}

// Off-CPU states in the timeline (thread_state_name's words).
const stateColours = {
  'on-cpu': '198, 40, 40', sleeping: '21, 101, 192', uninterruptible: '230, 81, 0', preempted: '46, 125, 50',
  blocked: '84, 110, 122', stopped: '106, 27, 154', idle: '158, 158, 158', other: '33, 33, 33',
};
let stateTotals = new Map();

function renderTimeline() {
  const box = $('timeline');
  box.replaceChildren();
  stateTotals = new Map();
  if (!timeline) return;
  let max = 1;
  for (const thread of timeline.threads) for (const value of thread.lane) max = Math.max(max, value);
  const shown = timeline.threads.reduce((sum, thread) => sum + (thread.weight || 0), 0);
  const spanNs = (timeline.to - timeline.from) / timeline.buckets;
  const first = summary ? summary.first_time : timeline.from;
  for (const thread of timeline.threads) {
    const lane = document.createElement('div');
    lane.className = 'lane';
    lane.dataset.tid = thread.tid;
    const name = document.createElement('span');
    name.className = 'lane-name';
    // Each lane's share of what the timeline shows, before its name (which may be cut).
    name.textContent = `${percent(thread.weight || 0, shown)} ${thread.comm} ${thread.pid}/${thread.tid}`;
    name.dataset.share = String(shown > 0 ? (thread.weight || 0) / shown : 0);
    name.title = name.textContent;
    const canvas = document.createElement('canvas');
    canvas.width = timeline.buckets;
    canvas.height = 14;
    // The tooltip names the span under the pointer: its time and the thread's share of it.
    canvas.addEventListener('mousemove', (event) => {
      const rect = canvas.getBoundingClientRect();
      const index = Math.min(timeline.buckets - 1, Math.max(0, Math.floor((event.clientX - rect.left) / rect.width * timeline.buckets)));
      const at = (timeline.from + index * spanNs - first) / 1e6;
      canvas.title = `${thread.comm} ${thread.tid}: ${at.toFixed(1)} ms, ${percent(thread.lane[index], max)} of the busiest span`;
    });
    const context = canvas.getContext('2d');
    const states = Object.entries(thread.states || {});
    thread.lane.forEach((value, index) => {
      if (value <= 0) return;
      // Off-CPU: the colour of the state the thread spent most of this span in.
      let colour = '198, 40, 40';
      if (states.length) {
        const [state] = states.reduce((best, entry) => (entry[1][index] > best[1][index] ? entry : best));
        colour = stateColours[state] || stateColours.other;
      }
      context.fillStyle = `rgba(${colour}, ${0.25 + 0.75 * value / max})`;
      context.fillRect(index, 0, 1, 14);
    });
    for (const [state, values] of states) {
      stateTotals.set(state, (stateTotals.get(state) || 0) + values.reduce((a, b) => a + b, 0));
    }
    lane.append(name, canvas);
    box.append(lane);
  }
  // The legend of an off-CPU event: each state and its share of the blocked time shown (of
  // wall-time: of the time shown, on the CPU and off it).
  const legend = $('timeline-legend');
  legend.replaceChildren();
  const blocked = [...stateTotals.values()].reduce((a, b) => a + b, 0);
  for (const [state, total] of [...stateTotals].sort((a, b) => b[1] - a[1])) {
    const entry = document.createElement('span');
    entry.dataset.state = state;
    entry.dataset.share = String(blocked > 0 ? total / blocked : 0);
    const swatch = document.createElement('i');
    swatch.style.background = `rgb(${stateColours[state] || stateColours.other})`;
    entry.append(swatch, document.createTextNode(`${state} ${percent(total, blocked)}`));
    legend.append(entry);
  }
  const selection = document.createElement('div');
  selection.id = 'selection';
  box.append(selection);
  drawSelection();
  renderTimeAxis(first);
  $('range-label').textContent = state.from === null && state.to === null ? 'Whole recording' :
    `Range ${(((state.from ?? first) - first) / 1e6).toFixed(1)} ms to ${(((state.to ?? timeline.to) - first) / 1e6).toFixed(1)} ms` +
    (embeddedTable ? ` (this page holds the recording in ${embeddedTable.buckets} spans of ` +
      `${((embeddedTable.to - embeddedTable.from) / embeddedTable.buckets / 1e6).toFixed(2)} ms: a range takes the spans it touches)` : '');
  $('range-from').value = state.from === null ? '' : ((state.from - first) / 1e6).toFixed(3);
  $('range-to').value = state.to === null ? '' : ((state.to - first) / 1e6).toFixed(3);
}

// Six ticks under the lanes: ms since the recording's first sample, at the canvas's edges and
// four points between.
function renderTimeAxis(first) {
  const axis = $('timeline-axis');
  axis.replaceChildren();
  const geometry = laneGeometry();
  if (!geometry || !timeline) return;
  axis.style.marginLeft = `${geometry.screenLeft - axis.parentElement.getBoundingClientRect().left}px`;
  axis.style.width = `${geometry.width}px`;
  for (let tick = 0; tick <= 5; ++tick) {
    const label = document.createElement('span');
    const at = timeline.from + (timeline.to - timeline.from) * tick / 5;
    label.textContent = `${((at - first) / 1e6).toFixed(1)} ms`;
    label.dataset.ms = String((at - first) / 1e6);
    label.style.left = `${tick * 20}%`;
    if (tick === 5) label.classList.add('last');
    axis.append(label);
  }
}

function laneGeometry() {
  const canvas = $('timeline').querySelector('canvas');
  if (!canvas) return null;
  const box = $('timeline').getBoundingClientRect();
  const rect = canvas.getBoundingClientRect();
  return { left: rect.left - box.left, width: rect.width, screenLeft: rect.left };
}

function drawSelection() {
  const selection = $('selection');
  const geometry = laneGeometry();
  if (!selection || !geometry || (state.from === null && state.to === null)) {
    if (selection) selection.hidden = true;
    return;
  }
  const span = timeline.to - timeline.from;
  const from = Math.max(0, ((state.from ?? timeline.from) - timeline.from) / span);
  const to = Math.min(1, ((state.to ?? timeline.to) - timeline.from) / span);
  selection.hidden = false;
  selection.style.left = `${geometry.left + from * geometry.width}px`;
  selection.style.width = `${Math.max(1, (to - from) * geometry.width)}px`;
}

function setupTimelineDrag() {
  const box = $('timeline');
  let start = null;
  const fraction = (event) => {
    const geometry = laneGeometry();
    return Math.min(1, Math.max(0, (event.clientX - geometry.screenLeft) / geometry.width));
  };
  box.addEventListener('mousedown', (event) => {
    if (!timeline || !laneGeometry()) return;
    start = fraction(event);
    event.preventDefault();
  });
  window.addEventListener('mousemove', (event) => {
    if (start === null) return;
    const now = fraction(event);
    state.from = timeOf(Math.min(start, now));
    state.to = timeOf(Math.max(start, now));
    drawSelection();
  });
  window.addEventListener('mouseup', (event) => {
    if (start === null) return;
    const end = fraction(event);
    if (Math.abs(end - start) < 0.002) {
      state.from = state.to = null;
    } else {
      state.from = timeOf(Math.min(start, end));
      state.to = timeOf(Math.max(start, end));
    }
    start = null;
    state.zoom = [];
    load();
  });
}

// ---- flame and icicle graphs ----

function nodeKey(node) { return `${node.name}\u001e${node.dso}`; }

// An unresolved function, perf's "0x..." offset in its file, is shown as speedscope shows it:
// the file's name and the offset ("liblzma.so.5.4.1+0x15bc9"), so that it says where it is.
function shownName(node) {
  const offset = /^0x0*([0-9a-f]+)$/.exec(node.name);
  if (!offset || !node.dso || node.dso.startsWith('[')) return node.name;
  return `${node.dso.slice(node.dso.lastIndexOf('/') + 1)}+0x${offset[1]}`;
}

// The node the zoom path leads to, and the nodes above it.
function zoomed(source = tree) {
  const path = [source.root];
  for (const key of state.zoom) {
    const next = path[path.length - 1].children.find((child) => nodeKey(child) === key);
    if (!next) break;
    path.push(next);
  }
  return path;
}

function hue(name) {
  let hash = 0;
  for (let i = 0; i < name.length; ++i) hash = (hash * 31 + name.charCodeAt(i)) | 0;
  return 10 + Math.abs(hash) % 50;
}

function renderGraph(source = tree) {
  const graph = $('graph');
  graph.replaceChildren();
  graph.setAttribute('aria-label', state.view === 'icicle' ? 'Icicle graph' :
    state.view === 'diff' ? 'Differential flame graph' : 'Flame graph');
  if (!source || source.weight === 0) {
    graph.textContent = 'No samples in this selection.';
    graph.style.height = 'auto';
    return;
  }
  const weight = source.weight;
  const path = zoomed(source);
  const focus = path[path.length - 1];
  const rowHeight = 17;
  const frames = [];
  // Ancestors of the zoomed node at full width, then the node's subtree scaled to it. Each frame
  // knows its parent frame; its path (for zooming to it) is made when asked.
  path.forEach((node, depth) => frames.push({
    node, depth, left: 0, width: 1, ancestor: depth < path.length - 1, parent: depth > 0 ? frames[depth - 1] : null,
  }));
  const walk = (node, depth, left, parent) => {
    let x = left;
    for (const child of node.children) {
      const width = child.total / focus.total;
      if (width < 0.001) { x += width; continue; }
      const frame = { node: child, depth, left: x, width, ancestor: false, parent };
      frames.push(frame);
      walk(child, depth + 1, x, frame);
      x += width;
    }
  };
  walk(focus, path.length, 0, frames[path.length - 1]);
  // The keys of the nodes from below the root down to the frame's.
  const zoomPathOf = (frame) => {
    const keys = [];
    for (let at = frame; at.parent; at = at.parent) keys.push(nodeKey(at.node));
    return keys.reverse();
  };
  const maxDepth = frames.reduce((deepest, frame) => Math.max(deepest, frame.depth), 0);
  graph.style.height = `${(maxDepth + 1) * rowHeight}px`;
  const fragment = document.createDocumentFragment();
  for (const frame of frames) {
    const element = document.createElement('div');
    element.className = 'frame';
    if (frame.ancestor) element.classList.add('ancestor');
    if (frame.node.dso === '[kernel.kallsyms]') element.classList.add('kernel');
    element.style.setProperty('--hue', hue(frame.node.name));
    element.style.left = `${frame.left * 100}%`;
    element.style.width = `${frame.width * 100}%`;
    const row = state.view === 'icicle' ? frame.depth : maxDepth - frame.depth;
    if (frame.node.delta !== undefined) {
      // Red where the new recording spends more of its time, blue where less.
      const strength = Math.min(1, Math.abs(frame.node.delta) / 10);
      element.classList.add('diff');
      element.style.setProperty('--diff-hue', frame.node.delta >= 0 ? '0' : '220');
      element.style.setProperty('--diff-saturation', `${Math.round(strength * 90)}%`);
      element.dataset.delta = frame.node.delta.toFixed(2);
    }
    element.style.top = `${row * rowHeight}px`;
    element.textContent = shownName(frame.node);
    element.title = frame.node.delta !== undefined ?
      `${shownName(frame.node)} (${frame.node.dso || 'all'}): ${frame.node.base_share.toFixed(2)} % -> ${frame.node.current_share.toFixed(2)} % (${frame.node.delta >= 0 ? '+' : ''}${frame.node.delta.toFixed(2)} points)` :
      `${shownName(frame.node)} (${frame.node.dso || 'all'}): ${percent(frame.node.total, weight)} total, ${percent(frame.node.self, weight)} self`;
    element.tabIndex = 0;
    element.setAttribute('role', 'treeitem');
    element.dataset.name = frame.node.name;
    element.dataset.total = frame.node.total;
    element.dataset.share = (frame.node.total / weight).toString();
    element.addEventListener('click', () => zoomTo(zoomPathOf(frame)));
    element.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') { zoomTo(zoomPathOf(frame)); event.preventDefault(); }
    });
    element.addEventListener('focus', () => showDetails(frame.node));
    element.addEventListener('mouseenter', () => showDetails(frame.node));
    fragment.append(element);
  }
  graph.append(fragment);
  anchorGraph();
}

// The graph scrolls in a box of its own, anchored at its root: the bottom of a flame graph, the
// top of an icicle graph, so a deep stack's root is on the first screen (also after a resize).
function anchorGraph() {
  const box = $('graph-scroll');
  box.scrollTop = state.view === 'icicle' ? 0 : box.scrollHeight;
}

// ---- stack chart ----

// One thread's samples in time order (x: time, y: depth from the root), as Firefox Profiler's
// stack chart: the thread the tid filter names, else the one that weighs most in the selection.
// It follows the range, event and filters.
let stackChart = null;
let stackRequest = 0;
let stackSegments = [];

async function loadStackChart() {
  const number = ++stackRequest;
  let answer;
  try {
    answer = await api('stackchart', selectionQuery(true));
  } catch (error) {
    if (number === stackRequest) $('status').textContent = error.message;
    return;
  }
  if (number !== stackRequest) return;
  stackChart = answer;
  drawStackChart();
  document.body.dataset.stackCharts = String(number);
}

function drawStackChart() {
  const canvas = $('stack-chart');
  const chart = stackChart;
  const label = $('stack-chart-label');
  stackSegments = [];
  if (!chart || !chart.runs.length) {
    label.textContent = 'No samples in this selection.';
    canvas.width = 0;
    return;
  }
  const rowHeight = 17;
  const depth = [];
  chart.stacks.forEach(([parent], index) => { depth[index] = parent < 0 ? 0 : depth[parent] + 1; });
  const maxDepth = depth.reduce((deepest, d) => Math.max(deepest, d), 0) + 1;
  const width = Math.max(200, $('stack-chart-box').clientWidth - 2);
  canvas.width = width;
  canvas.height = maxDepth * rowHeight;
  const context = canvas.getContext('2d');
  context.font = '11px system-ui, sans-serif';
  context.textBaseline = 'middle';
  // A run lasts until the next begins; the last one a typical gap past its last sample.
  const runs = chart.runs;
  const gap = runs.length > 1 ? (runs[runs.length - 1][0] - runs[0][0]) / Math.max(1, runs.reduce((n, run) => n + run[3], 0) - 1) : 1e6;
  const from = runs[0][0];
  const to = runs[runs.length - 1][1] + gap;
  const x = (time) => (time - from) / (to - from) * width;
  const paths = new Map();
  const pathOf = (stack) => {
    if (stack < 0) return [];
    if (!paths.has(stack)) {
      const path = [];
      for (let s = stack; s >= 0; s = chart.stacks[s][0]) path.push(s);
      paths.set(stack, path.reverse());
    }
    return paths.get(stack);
  };
  const open = [];
  const flush = (d) => {
    const segment = open[d];
    if (!segment) return;
    open[d] = null;
    const [name, dso] = chart.functions[chart.stacks[segment.stack][1]];
    const shown = shownName({ name, dso });
    context.fillStyle = `hsl(${hue(name)}, 70%, 62%)`;
    context.fillRect(segment.x0, d * rowHeight, Math.max(1, segment.x1 - segment.x0 - 0.5), rowHeight - 1);
    if (segment.x1 - segment.x0 > 24) {
      context.save();
      context.beginPath();
      context.rect(segment.x0, d * rowHeight, segment.x1 - segment.x0 - 2, rowHeight);
      context.clip();
      context.fillStyle = '#111';
      context.fillText(shown, segment.x0 + 3, d * rowHeight + rowHeight / 2);
      context.restore();
    }
    stackSegments.push({ name, dso, depth: d, x0: segment.x0, x1: segment.x1,
      start: segment.start, end: segment.end });
  };
  runs.forEach((run, index) => {
    const x0 = x(run[0]);
    const end = index + 1 < runs.length ? runs[index + 1][0] : run[1] + gap;
    const x1 = x(end);
    const path = pathOf(run[2]);
    for (let d = 0; d < Math.max(path.length, open.length); ++d) {
      if (d < path.length && open[d] && open[d].stack === path[d]) {
        open[d].x1 = x1;
        open[d].end = end;
        continue;
      }
      for (let deeper = open.length - 1; deeper >= d; --deeper) flush(deeper);
      if (d < path.length) open[d] = { stack: path[d], x0, x1, start: run[0], end };
    }
  });
  for (let d = open.length - 1; d >= 0; --d) flush(d);
  const first = summary ? summary.first_time : from;
  label.textContent = `${chart.comm} ${chart.tid}: ${((from - first) / 1e6).toFixed(1)} ms to ` +
    `${((to - first) / 1e6).toFixed(1)} ms, ${runs.reduce((n, run) => n + run[3], 0)} samples` +
    (chart.truncated ? ' (the first runs only: select a shorter range for the rest)' : '');
  canvas.dataset.segments = String(stackSegments.length);
}

function setupStackChart() {
  const canvas = $('stack-chart');
  canvas.addEventListener('mousemove', (event) => {
    const box = canvas.getBoundingClientRect();
    const px = event.clientX - box.left;
    const d = Math.floor((event.clientY - box.top) / 17);
    const segment = stackSegments.find((s) => s.depth === d && s.x0 <= px && px < s.x1);
    const first = summary ? summary.first_time : 0;
    canvas.title = segment ? `${shownName(segment)} (${segment.dso}): ` +
      `${((segment.start - first) / 1e6).toFixed(1)} to ${((segment.end - first) / 1e6).toFixed(1)} ms` : '';
  });
}

// ---- diff ----

// The base and new trees as one, by call path: each node with both shares (% of its own
// recording) and the new one's weight, so widths are the new recording's.
function mergeTrees(base, current) {
  const merge = (a, b) => {
    const node = {
      name: (b || a).name, dso: (b || a).dso,
      total: b ? b.total : 0, self: b ? b.self : 0,
      base_share: a && base.weight ? 100 * a.total / base.weight : 0,
      current_share: b && current.weight ? 100 * b.total / current.weight : 0,
      children: [],
    };
    node.delta = node.current_share - node.base_share;
    const byKey = new Map();
    for (const child of (a ? a.children : [])) byKey.set(nodeKey(child), [child, null]);
    for (const child of (b ? b.children : [])) {
      const entry = byKey.get(nodeKey(child));
      if (entry) entry[1] = child; else byKey.set(nodeKey(child), [null, child]);
    }
    for (const [childA, childB] of byKey.values()) node.children.push(merge(childA, childB));
    node.children.sort((x, y) => y.total - x.total);
    return node;
  };
  return { weight: current.weight, root: merge(base.root, current.root) };
}

function pValueText(entry) {
  const p = entry.p_value;
  const text = p < 1e-300 ? '<1e-300' : p >= 0.01 ? p.toFixed(2) : p.toExponential(1);
  return entry.significant ? `${text} *` : text;
}

function renderDiffTable() {
  const body = $('diff-table').querySelector('tbody');
  body.replaceChildren();
  if (!diff) return;
  const eventName = summary.events[state.event].name;
  const event = diff.table.events.find((entry) => entry.name === eventName);
  $('diff-legend').textContent = `${files.base} against ${files.current}: widths are the new ` +
    'recording\'s shares; red grew, blue shrank (by points of each recording\'s own total). ' +
    'A range is taken as times since each recording\'s first sample; p-value: the chance of the ' +
    'change by sampling alone, * beyond the noise of the whole table.' +
    (event && event.rate_note ? ` ${event.rate_note}` : '');
  if (!event) return;
  $('diff-legend').dataset.baseSamples = String(event.base.samples);
  $('diff-legend').dataset.newSamples = String(event.new.samples);
  for (const entry of event.rows.slice(0, 200)) {
    const row = document.createElement('tr');
    row.dataset.name = (entry.keys.sym || '').replace(/^\[[.kgGuH]\] /, '');  // perf's "[.] " mark
    row.dataset.delta = String(entry.delta);
    row.classList.add(entry.delta >= 0 ? 'grew' : 'shrank');
    row.dataset.pValue = String(entry.p_value);
    row.dataset.significant = String(entry.significant);
    if (!entry.significant) row.classList.add('noise');
    const self = diff.table.children ? 'total_percent' : 'self_percent';
    const cells = [
      [entry.keys.sym || '', 'name'], [entry.keys.dso || '', 'name'],
      [entry.base.present ? entry.base[self].toFixed(2) + ' %' : '', 'number'],
      [entry.new.present ? entry.new[self].toFixed(2) + ' %' : '', 'number'],
      [(entry.delta >= 0 ? '+' : '') + entry.delta.toFixed(2), 'number delta'],
      [entry.ratio === null ? '' : entry.ratio.toFixed(2), 'number'],
      [pValueText(entry), 'number'],
    ];
    for (const [text, className] of cells) {
      const cell = document.createElement('td');
      cell.textContent = text;
      if (className) cell.className = className;
      if (className === 'name') cell.title = text;  // cut with an ellipsis when long
      row.append(cell);
    }
    body.append(row);
  }
}

function zoomTo(path) {
  state.zoom = path;
  render();
  const focus = [...$('graph').querySelectorAll('.frame')].find((element) => !element.classList.contains('ancestor'));
  if (focus) focus.focus();
}

function showDetails(node) {
  selectedNode = node;
  $('details').textContent = `${shownName(node)} — ${node.dso || 'all'}: ${percent(node.total, tree.weight)} total, ` +
    `${percent(node.self, tree.weight)} self (${node.total} of ${tree.weight})`;
}

// ---- call tree ----

function renderCallTree() {
  const body = $('calltree').querySelector('tbody');
  body.replaceChildren();
  const source = state.view === 'bottomup' ? bottomUp : tree;
  if (!source) return;
  const rows = document.createDocumentFragment();
  const compare = {
    total: (a, b) => b.total - a.total,
    self: (a, b) => b.self - a.self,
    name: (a, b) => a.name.localeCompare(b.name),
  }[state.sort];
  const add = (node, depth, key) => {
    const row = document.createElement('tr');
    row.tabIndex = 0;
    row.dataset.key = key;
    row.dataset.name = node.name;
    const open = state.expanded.has(key);
    // Bottom-up, a top-level row is where samples were taken: its total is its self time.
    const self = state.view === 'bottomup' ? (depth === 0 ? node.total : null) : node.self;
    const cells = [percent(node.total, source.weight), self === null ? '' : percent(self, source.weight)];
    for (const text of cells) {
      const cell = document.createElement('td');
      cell.className = 'number';
      cell.textContent = text;
      row.append(cell);
    }
    const name = document.createElement('td');
    name.className = 'name';
    name.style.paddingLeft = `${depth * 14 + 4}px`;
    const toggle = document.createElement('span');
    toggle.className = 'toggle';
    toggle.textContent = node.children.length ? (open ? '▾' : '▸') : '';
    name.append(toggle, document.createTextNode(shownName(node)));
    name.title = shownName(node);  // cut with an ellipsis when long
    const dso = document.createElement('td');
    dso.className = 'name';
    dso.textContent = node.dso;
    dso.title = node.dso;
    row.append(name, dso);
    if (state.search && shownName(node).toLowerCase().includes(state.search.toLowerCase())) row.classList.add('match');
    const flip = () => {
      if (open) state.expanded.delete(key); else state.expanded.add(key);
      renderCallTree();
      const again = body.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
      if (again) again.focus();
    };
    row.addEventListener('click', flip);
    row.addEventListener('focus', () => { selectedNode = node; });
    row.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ' ||
          (event.key === 'ArrowRight' && !open) || (event.key === 'ArrowLeft' && open)) {
        flip();
        event.preventDefault();
      } else if (event.key === 'ArrowDown' && row.nextElementSibling) {
        row.nextElementSibling.focus();
        event.preventDefault();
      } else if (event.key === 'ArrowUp' && row.previousElementSibling) {
        row.previousElementSibling.focus();
        event.preventDefault();
      }
    });
    rows.append(row);
    if (open) for (const child of [...node.children].sort(compare)) add(child, depth + 1, key + '\u001f' + nodeKey(child));
  };
  for (const child of [...source.root.children].sort(compare)) add(child, 0, nodeKey(child));
  body.append(rows);
}

function expandHotPath() {
  const source = state.view === 'bottomup' ? bottomUp : tree;
  if (!source) return;
  if (state.view !== 'tree' && state.view !== 'bottomup') state.view = 'tree';
  let node = source.root;
  let key = '';
  while (node.children.length) {
    const hottest = node.children.reduce((a, b) => (b.total > a.total ? b : a));
    if (hottest.total * 2 < node.total && node !== source.root) break;
    key = key ? key + '\u001f' + nodeKey(hottest) : nodeKey(hottest);
    state.expanded.add(key);
    node = hottest;
  }
  render();
}

// ---- search ----

// The share of the selection in functions whose name holds the search text (a match inside a
// match counts once).
function renderSearch() {
  const text = state.search.toLowerCase();
  $('search').value = state.search;
  if (!text || !tree) {
    $('search-result').textContent = '';
    for (const element of document.querySelectorAll('.frame.match')) element.classList.remove('match');
    return;
  }
  const matches = (node) => shownName(node).toLowerCase().includes(text);
  const path = zoomed();
  const focus = path[path.length - 1];
  let matched = 0;
  const walk = (node) => {
    if (matches(node)) { matched += node.total; return; }
    for (const child of node.children) walk(child);
  };
  walk(focus);
  for (const element of document.querySelectorAll('.frame')) {
    element.classList.toggle('match', element.dataset.name.toLowerCase().includes(text));
  }
  const result = $('search-result');
  result.textContent = `${state.search}: ${percent(matched, focus.total)}`;
  result.dataset.share = focus.total > 0 ? String(matched / focus.total) : '0';
}

// ---- function pane ----

// Callers and callees of the open function, several levels each way (a butterfly, as hotspot's
// caller/callee view), from the call tree of the selection: every place the function is in it,
// merged by name level by level. Each row's share is of the whole selection.
const butterflyLevels = 4;

function renderFunctionCallers() {
  const pane = $('function-pane');
  if (!state.fn || !tree) { pane.hidden = true; return; }
  const callers = new Map(), callees = new Map();  // name -> { weight, children: Map }
  const add = (level, name, weight) => {
    if (!level.has(name)) level.set(name, { weight: 0, children: new Map() });
    const entry = level.get(name);
    entry.weight += weight;
    return entry.children;
  };
  // The callees of `node`, merged into `level`, `depth` levels down.
  const addCallees = (node, level, depth) => {
    if (depth === 0) return;
    for (const child of node.children) addCallees(child, add(level, child.name, child.total), depth - 1);
  };
  let total = 0;
  const ancestors = [];
  const walk = (node, inside) => {
    const here = node.name === state.fn;
    if (here && !inside) {
      total += node.total;
      // Its callers, nearest first: parent, grandparent, ...
      let level = callers;
      for (let i = ancestors.length - 1; i >= 1 && ancestors.length - i <= butterflyLevels; --i) {
        level = add(level, ancestors[i].name, node.total);
      }
      addCallees(node, callees, butterflyLevels);
    }
    ancestors.push(node);
    for (const child of node.children) walk(child, inside || here);
    ancestors.pop();
  };
  walk(tree.root, false);
  const fill = (table, entries) => {
    const body = table.querySelector('tbody');
    body.replaceChildren();
    const rows = (level, depth) => {
      for (const [name, entry] of [...level].sort((a, b) => b[1].weight - a[1].weight)) {
        const row = document.createElement('tr');
        row.dataset.name = name;
        row.dataset.level = String(depth);
        const share = document.createElement('td');
        share.textContent = percent(entry.weight, tree.weight);
        const label = document.createElement('td');
        label.style.paddingLeft = `${(depth - 1) * 14 + 6}px`;
        label.textContent = name;
        row.append(share, label);
        body.append(row);
        rows(entry.children, depth + 1);
      }
    };
    rows(entries, 1);
  };
  fill($('function-callers'), callers);
  fill($('function-callees'), callees);
  $('function-title').textContent = state.fn;
  $('function-title').dataset.total = String(total);
  pane.hidden = false;
}

function closeFunction() {
  state.fn = '';
  ++functionRequest;  // an answer still on its way is dropped
  writeHash();
  $('function-pane').hidden = true;
}

let functionRequest = 0;
// Opens the function pane on `name` and brings it into view (`reveal`); a selection change
// reloads it in place.
async function openFunction(name, reveal = true) {
  state.fn = name;
  writeHash();
  renderFunctionCallers();
  if (reveal && !$('function-pane').hidden) $('function-pane').scrollIntoView({ block: 'start' });
  const number = ++functionRequest;
  const params = new URLSearchParams(selectionQuery(true));
  params.set('name', name);
  $('function-summary').textContent = 'Reading the function\'s code...';
  for (const id of ['function-lines', 'function-instructions']) $(id).querySelector('tbody').replaceChildren();
  let answer;
  try {
    answer = await api('function', params.toString());
  } catch (error) {
    if (number === functionRequest) $('function-summary').textContent = error.message;
    document.body.dataset.functionLoads = String(number);
    return;
  }
  if (number !== functionRequest) return;
  const fn = answer.functions[0];
  $('function-summary').dataset.samples = fn ? String(fn.samples) : '0';
  if (!fn) {
    $('function-summary').textContent = 'No samples of it in this selection.';
  } else {
    $('function-summary').textContent =
      `${fn.dso}: ${fn.samples} samples, ${fn.percent_of_total.toFixed(2)} % of ${answer.event} in ` +
      `${answer.whole_recording || (state.from === null && state.to === null) ? 'the whole recording' : 'the selected range'}` +
      (answer.whole_recording && (state.from !== null || state.to !== null || state.comm || state.pid || state.tid || state.dso)
        ? ' (this page carries the code shares of the whole recording only)' : '') +
      ' (shares below are of the function\'s own samples)' + (fn.no_code_reason ? `; ${fn.no_code_reason}` : '');
    const lines = $('function-lines').querySelector('tbody');
    for (const line of fn.source_lines) {
      const row = document.createElement('tr');
      for (const text of [line.percent.toFixed(2), `${line.file}:${line.line}`, line.function]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.append(cell);
      }
      lines.append(row);
    }
    const instructions = $('function-instructions').querySelector('tbody');
    const rows = document.createDocumentFragment();
    for (const instruction of fn.instructions) {
      const row = document.createElement('tr');
      row.dataset.address = instruction.address;
      row.dataset.percent = String(instruction.percent);
      if (instruction.percent >= 5) row.classList.add('hot');
      const source = instruction.source ? `${instruction.source.file.split('/').pop()}:${instruction.source.line}` : '';
      for (const text of [instruction.samples ? instruction.percent.toFixed(2) : '', instruction.address, instruction.text, source]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.append(cell);
      }
      rows.append(row);
    }
    instructions.append(rows);
  }
  document.body.dataset.functionLoads = String(number);
}

// ---- controls ----

function renderTabs() {
  for (const tab of document.querySelectorAll('#tabs [role="tab"]')) {
    tab.setAttribute('aria-selected', String(tab.dataset.view === state.view));
  }
}

function setupControls() {
  const events = $('event');
  summary.events.forEach((event, index) => {
    // An event with no samples (the switch event an off-CPU recording turned into offcpu-time)
    // would show an empty page: not offered, unless nothing has samples.
    if (!event.samples && summary.events.some((other) => other.samples)) return;
    const option = document.createElement('option');
    option.value = index;
    option.textContent = `${event.name} (${event.samples} samples)`;
    events.append(option);
  });
  events.value = state.event;
  events.addEventListener('change', () => { state.event = Number(events.value); state.zoom = []; load(); });
  const list = $('dso-list');
  for (const dso of summary.dsos) {
    const option = document.createElement('option');
    option.value = dso;
    list.append(option);
  }
  for (const key of ['comm', 'pid', 'tid', 'dso']) {
    const input = $(`filter-${key}`);
    input.value = state[key];
    input.addEventListener('change', () => { state[key] = input.value.trim(); state.zoom = []; load(); });
  }
  const search = $('search');
  search.addEventListener('input', () => { state.search = search.value; writeHash(); renderSearch(); if (state.view === 'tree' || state.view === 'bottomup') renderCallTree(); });
  for (const tab of document.querySelectorAll('#tabs [role="tab"]')) {
    tab.addEventListener('click', () => { state.view = tab.dataset.view; render(); });
  }
  $('reset-zoom').addEventListener('click', () => zoomTo([]));
  $('hot-path').addEventListener('click', expandHotPath);
  $('function-close').addEventListener('click', closeFunction);
  setupStackChart();
  // A page without a server has no samples' order to draw.
  $('tab-stack').hidden = Boolean(embedded);
  $('open-function').addEventListener('click', () => { if (selectedNode && selectedNode.dso) openFunction(selectedNode.name); });
  for (const button of document.querySelectorAll('#calltree [data-sort]')) {
    button.addEventListener('click', () => { state.sort = button.dataset.sort; renderCallTree(); });
  }
  $('clear-range').addEventListener('click', () => { state.from = state.to = null; state.zoom = []; load(); });
  const rangeInput = () => {
    const first = summary.first_time;
    const from = $('range-from').value.trim(), to = $('range-to').value.trim();
    state.from = from === '' ? null : Math.round(first + Number(from) * 1e6);
    state.to = to === '' ? null : Math.round(first + Number(to) * 1e6);
    state.zoom = [];
    load();
  };
  $('range-from').addEventListener('change', rangeInput);
  $('range-to').addEventListener('change', rangeInput);
  document.addEventListener('keydown', (event) => {
    if (event.key === 'f' && document.activeElement.tagName !== 'INPUT' && selectedNode && selectedNode.dso) {
      openFunction(selectedNode.name);
    } else if (event.key === '/' && document.activeElement.tagName !== 'INPUT') {
      search.focus();
      event.preventDefault();
    } else if (event.key === '?' && document.activeElement.tagName !== 'INPUT') {
      $('shortcuts').hidden = !$('shortcuts').hidden;
    } else if (event.key === 'Escape') {
      if (!$('shortcuts').hidden) {
        $('shortcuts').hidden = true;
      } else if (!$('function-pane').hidden) {
        closeFunction();
      } else if (document.activeElement === search && state.search) {
        state.search = '';
        renderSearch();
      } else {
        zoomTo([]);
      }
    }
  });
  window.addEventListener('resize', () => {
    if (state.view === 'stack') drawStackChart();
    drawSelection();
    anchorGraph();
    renderTimeAxis(summary ? summary.first_time : 0);
  });
  window.addEventListener('hashchange', () => { readHash(); events.value = state.event; load(); });
  setupTimelineDrag();
}

async function start() {
  readHash();
  try {
    summary = await api('summary', '');
  } catch (error) {
    $('status').textContent = `The viewer's server answered: ${error.message}`;
    return;
  }
  if (state.event >= summary.events.length || !summary.events[state.event].samples) {
    state.event = Math.max(0, summary.events.findIndex((event) => event.samples));
  }
  files = await api('files', '');
  $('tab-diff').hidden = !files.current;
  if (!files.current && state.view === 'diff') state.view = 'flame';
  setupControls();
  await load();  // opens the function pane the address names
}

start();
