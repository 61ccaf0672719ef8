// Drives `perfscope view` in headless Chromium and prints what the application shows, as one JSON
// object on stdout; tests/cli/view_cli_test.cpp starts the viewer, records the workloads and
// judges the figures. Exit status 77 (ctest's skip) with the reason on stderr when Chromium or
// puppeteer-core cannot be had; 1 when a page does not behave.
//
//   node check_viewer.mjs MODE URL ARTIFACT_DIR
//     flame    the known-answer recording: frame widths, a click's zoom, search, the bottom-up
//              rows, the call tree's hot path, keyboard zoom and a reload of the zoomed address
//     phased   a recording whose first half is leaf_60 only: the timeline dragged from its start
//              to RANGE_END (a fraction of its width), the function pane in that range, then
//              the whole recording filtered to thread TID (the 4th argument: RANGE_END,TID)
//     offcpu   an --off-cpu recording: the event switch and the waits it shows
//     hostile  a process named like markup: what the page holds after rendering it
//     names    unresolved frames: each frame's label and the function it stands for
//     deep     a deep stack: where the root frame is on the first screen, flame and icicle
//     stack    the stack chart: its segments (function, depth, x span), in time order
//     diff     two recordings (6,3,1 and 3,6,1 units): the diff view's colours and table
//     http     the server's refusals: no token, a foreign Host, a path out of the application
//
// Chromium is /usr/bin/chromium unless PERFSCOPE_CHROMIUM names another. Screenshots of each
// view go to ARTIFACT_DIR.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const skip = 77;

function fail(message) {
  process.stderr.write(`check_viewer: ${message}\n`);
  process.exit(1);
}

const [mode, url, artifacts, argument] = process.argv.slice(2);
// phased: RANGE_END,TID (the tid the filter is tried with)
const [rangeEnd, filterTid] = (argument || '').split(',');
if (!['flame', 'phased', 'offcpu', 'hostile', 'diff', 'http', 'names', 'deep', 'stack'].includes(mode) || !url || !artifacts) {
  fail('usage: check_viewer.mjs flame|phased|offcpu|hostile|diff|http|names|deep|stack URL ARTIFACT_DIR');
}

// A raw request with the given path and Host header (fetch would normalize both).
function request(requestPath, host) {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const outgoing = http.request({
      host: target.hostname, port: target.port, path: requestPath, method: 'GET',
      headers: { Host: host ?? target.host },
    }, (response) => {
      let body = '';
      response.on('data', (chunk) => { body += chunk; });
      response.on('end', () => resolve({ status: response.statusCode, body }));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

if (mode === 'http') {
  const target = new URL(url);
  const token = target.pathname;  // /t/TOKEN/
  const results = {
    with_token: (await request(token)).status,
    api_with_token: (await request(`${token}api/summary`)).status,
    no_token: (await request('/')).status,
    wrong_token: (await request('/t/0123456789abcdef0123456789abcdef/')).status,
    foreign_host: (await request(token, 'attacker.example:80')).status,
    foreign_host_same_port: (await request(token, `attacker.example:${target.port}`)).status,
  };
  for (const traversal of [`${token}../../../../etc/passwd`, `${token}%2e%2e/%2e%2e/etc/passwd`,
    `${token}app.js/../../../etc/passwd`, `${token}api/../../../../etc/passwd`]) {
    const answer = await request(traversal);
    results[`traversal ${traversal.slice(token.length)}`] = {
      status: answer.status, leaked: answer.body.includes('root:'),
    };
  }
  process.stdout.write(JSON.stringify(results) + '\n');
  process.exit(0);
}

const chromium = process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium';
try {
  fs.accessSync(chromium, fs.constants.X_OK);
} catch {
  process.stderr.write(`check_viewer: SKIP: no Chromium at ${chromium} (apt-get install chromium, ` +
                       'or set PERFSCOPE_CHROMIUM)\n');
  process.exit(skip);
}
let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch (error) {
  process.stderr.write('check_viewer: SKIP: puppeteer-core is not installed (run scripts/install-deps, ' +
                       `or npm ci in ${path.dirname(new URL(import.meta.url).pathname)}): ` +
                       `${error.message.split('\n')[0]}\n`);
  process.exit(skip);
}

fs.mkdirSync(artifacts, { recursive: true });
const userDataDir = fs.mkdtempSync(path.join(artifacts, 'chromium-profile-'));
const pageErrors = [];
const dialogs = [];
let browser = null;

async function finish(code) {
  if (browser) await browser.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
  process.exit(code);
}

try {
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir,
    timeout: 90000,  // a loaded machine (the sanitizer pass) starts Chromium slowly
    protocolTimeout: 180000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.setDefaultTimeout(60000);
  page.setDefaultNavigationTimeout(60000);
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'error') pageErrors.push(message.text()); });
  page.on('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss(); });

  const renders = () => page.evaluate(() => Number(document.body.dataset.renders || 0));
  const afterRender = async (before, action) => {
    await action();
    await page.waitForFunction((n) => Number(document.body.dataset.renders || 0) > n, { timeout: 60000 }, before);
  };
  const open = async (address) => {
    await page.goto(address, { waitUntil: 'load' });
    await page.waitForFunction(() => Number(document.body.dataset.renders || 0) > 0, { timeout: 60000 });
  };
  const screenshot = async (name) => {
    const file = path.join(artifacts, `${url.startsWith('file:') ? 'html' : 'view'}-${mode}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  };
  // Width of the first frame named `name` that is not an ancestor of the zoomed node, in px.
  const frameWidth = (name) => page.evaluate((wanted) => {
    const frame = [...document.querySelectorAll('.frame')]
      .find((element) => element.dataset.name === wanted && !element.classList.contains('ancestor'));
    return frame ? frame.getBoundingClientRect().width : null;
  }, name);
  const search = async (text) => {
    await page.click('#search', { clickCount: 3 });
    await page.keyboard.press('Backspace');
    await page.type('#search', text);
    return page.$eval('#search-result', (element) => Number(element.dataset.share || 0));
  };
  const result = { screenshots: [] };

  await open(url);

  if (mode === 'flame') {
    result.screenshots.push(await screenshot('flame'));
    result.main_width = await frameWidth('main');
    result.work_60_width = await frameWidth('work_60');
    result.work_30_width = await frameWidth('work_30');
    result.graph_width = await page.$eval('#graph', (element) => element.getBoundingClientRect().width);
    // Click work_60: it fills the graph, and the address holds the zoom.
    let before = await renders();
    await afterRender(before, () => page.evaluate(() => {
      [...document.querySelectorAll('.frame')].find((element) => element.dataset.name === 'work_60').click();
    }));
    result.zoomed_work_60_width = await frameWidth('work_60');
    result.zoomed_hash = await page.evaluate(() => location.hash);
    result.screenshots.push(await screenshot('zoomed'));
    // The same address in a new load shows the same zoom.
    await page.goto('about:blank');
    await open(url + result.zoomed_hash);
    result.reloaded_work_60_width = await frameWidth('work_60');
    // Escape resets the zoom; search totals the matches.
    before = await renders();
    await afterRender(before, () => page.keyboard.press('Escape'));
    result.search_work_30 = await search('work_30');
    result.highlighted = await page.$$eval('.frame.match', (frames) => frames.map((frame) => frame.dataset.name));
    result.screenshots.push(await screenshot('search'));
    await search('');
    // Keyboard: "/" focuses the search; Tab reaches a frame; Enter zooms to it.
    await page.click('#details');
    await page.keyboard.press('/');
    result.slash_focuses_search = await page.evaluate(() => document.activeElement.id === 'search');
    await page.evaluate(() => {
      [...document.querySelectorAll('.frame')].find((element) => element.dataset.name === 'work_30').focus();
    });
    before = await renders();
    await afterRender(before, () => page.keyboard.press('Enter'));
    result.keyboard_zoom = await page.evaluate(() => document.activeElement.dataset.name || null);
    result.keyboard_zoom_width = await frameWidth('work_30');
    before = await renders();
    await afterRender(before, () => page.keyboard.press('Escape'));
    // The function pane of leaf_60 (focus its frame, press f): callers and per-instruction shares.
    await page.evaluate(() => {
      [...document.querySelectorAll('.frame')].find((element) => element.dataset.name === 'leaf_60').focus();
    });
    await page.keyboard.press('f');
    await page.waitForFunction(() => Number(document.body.dataset.functionLoads || 0) > 0, { timeout: 60000 });
    result.function_title = await page.$eval('#function-title', (element) => element.textContent);
    result.function_callers = await page.$$eval('#function-callers tr[data-level="1"]', (rows) => rows.map((row) => row.dataset.name));
    // The butterfly: the callers' chain, a level each row (one caller at each level here).
    result.function_caller_chain = await page.$$eval('#function-callers tr', (rows) =>
      rows.map((row) => [row.dataset.name, Number(row.dataset.level)]));
    result.function_instructions = await page.$$eval('#function-instructions tbody tr', (rows) =>
      rows.map((row) => ({ address: row.dataset.address, percent: Number(row.dataset.percent) })));
    result.function_lines = await page.$$eval('#function-lines tbody tr', (rows) => rows.length);
    result.function_hash = await page.evaluate(() => location.hash);
    result.function_pane_in_view = await page.$eval('#function-pane', (pane) => {
      const box = pane.getBoundingClientRect();
      return box.top >= 0 && box.top < window.innerHeight;
    });
    result.screenshots.push(await screenshot('function'));
    // "?" lists the shortcuts; Escape hides the list first, then closes the pane.
    await page.keyboard.press('?');
    result.shortcuts = await page.$eval('#shortcuts', (list) =>
      list.hidden ? [] : [...list.querySelectorAll('dt')].map((key) => key.textContent));
    await page.keyboard.press('Escape');
    result.shortcuts_hidden = await page.$eval('#shortcuts', (list) => list.hidden);
    // Escape closes it, and the address no longer names it.
    await page.keyboard.press('Escape');
    result.function_pane_closed = await page.$eval('#function-pane', (pane) => pane.hidden);
    result.function_hash_closed = await page.evaluate(() => location.hash);
    // The bottom-up view: its top-level rows are the functions' self shares.
    before = await renders();
    await afterRender(before, () => page.click('#tab-bottomup'));
    result.bottom_up_rows = await page.$$eval('#calltree tbody tr', (rows) => rows.map((row) => ({
      name: row.dataset.name, total: row.children[0].textContent, self: row.children[1].textContent,
    })));
    result.screenshots.push(await screenshot('bottomup'));
    // The call tree with its hot path expanded: main, work_60, leaf_60 in order.
    before = await renders();
    await afterRender(before, () => page.click('#tab-tree'));
    before = await renders();
    await afterRender(before, () => page.click('#hot-path'));
    result.hot_path = await page.$$eval('#calltree tbody tr', (rows) => rows.map((row) => row.dataset.name));
    result.screenshots.push(await screenshot('calltree'));
    // The icicle graph: the same frames, top-down.
    before = await renders();
    await afterRender(before, () => page.click('#tab-icicle'));
    result.icicle_work_60_width = await frameWidth('work_60');
    result.icicle_main_width = await frameWidth('main');
    result.screenshots.push(await screenshot('icicle'));
  } else if (mode === 'phased') {
    result.whole_leaf_60 = await search('leaf_60');
    // The time axis under the lanes, and each lane's share.
    result.axis = await page.$$eval('#timeline-axis span', (labels) => labels.map((label) => Number(label.dataset.ms)));
    result.axis_aligned = await page.evaluate(() => {
      const canvas = document.querySelector('#timeline canvas').getBoundingClientRect();
      const axis = document.getElementById('timeline-axis').getBoundingClientRect();
      return Math.abs(canvas.left - axis.left) < 2 && Math.abs(canvas.width - axis.width) < 2;
    });
    result.lane_shares = await page.$$eval('#timeline .lane-name', (names) => names.map((name) => Number(name.dataset.share)));
    // Drag over the first phase of the timeline: every view follows the range.
    const lane = await page.$eval('#timeline canvas', (canvas) => {
      const box = canvas.getBoundingClientRect();
      return { x: box.left, y: box.top + box.height / 2, width: box.width };
    });
    const before = await renders();
    await afterRender(before, async () => {
      await page.mouse.move(lane.x + 1, lane.y);
      await page.mouse.down();
      await page.mouse.move(lane.x + lane.width * Number(rangeEnd) / 2, lane.y, { steps: 5 });
      await page.mouse.move(lane.x + lane.width * Number(rangeEnd), lane.y, { steps: 5 });
      await page.mouse.up();
    });
    result.range_label = await page.$eval('#range-label', (element) => element.textContent);
    result.hash = await page.evaluate(() => location.hash);
    result.first_half_leaf_60 = await search('leaf_60');
    result.first_half_leaf_30 = await search('leaf_30');
    result.screenshots.push(await screenshot('range'));
    const rowsBefore = await renders();
    await afterRender(rowsBefore, () => page.click('#tab-bottomup'));
    result.first_half_rows = await page.$$eval('#calltree tbody tr', (rows) => rows.map((row) => ({
      name: row.dataset.name, total: row.children[0].textContent,
    })));
    const flameBefore = await renders();
    await afterRender(flameBefore, () => page.click('#tab-flame'));
    // The function pane follows the range: leaf_60's own samples in it.
    await search('');
    await page.evaluate(() => {
      [...document.querySelectorAll('.frame')].find((element) => element.dataset.name === 'leaf_60').focus();
    });
    await page.keyboard.press('f');
    await page.waitForFunction(() => Number(document.body.dataset.functionLoads || 0) > 0, { timeout: 60000 });
    result.range_function_samples = await page.$eval('#function-summary', (element) => Number(element.dataset.samples));
    result.range_function_summary = await page.$eval('#function-summary', (element) => element.textContent);
    // The whole recording, of one thread: the first program's.
    const loadsBefore = await page.evaluate(() => Number(document.body.dataset.functionLoads || 0));
    let filtered = await renders();
    await afterRender(filtered, () => page.click('#clear-range'));
    // The open function pane follows: its samples are the whole recording's now.
    await page.waitForFunction((loads) => Number(document.body.dataset.functionLoads || 0) > loads,
      { timeout: 60000 }, loadsBefore);
    result.cleared_function_samples = await page.$eval('#function-summary', (element) => Number(element.dataset.samples));
    filtered = await renders();
    await afterRender(filtered, () => page.evaluate((tid) => {
      const input = document.getElementById('filter-tid');
      input.value = tid;
      input.dispatchEvent(new Event('change'));
    }, filterTid));
    result.tid_leaf_60 = await search('leaf_60');
    result.tid_leaf_30 = await search('leaf_30');
    result.screenshots.push(await screenshot('tid'));
    filtered = await renders();
    await afterRender(filtered, () => page.evaluate(() => {
      const input = document.getElementById('filter-tid');
      input.value = '';
      input.dispatchEvent(new Event('change'));
    }));
  } else if (mode === 'offcpu') {
    result.events = await page.$$eval('#event option', (options) => options.map((option) => option.textContent));
    // The option's value is the event's index (events without samples are not offered).
    const index = await page.$$eval('#event option', (options) =>
      Number((options.find((option) => option.textContent.startsWith('offcpu-time')) || { value: -1 }).value));
    result.offcpu_index = index;
    if (index >= 0) {
      const before = await renders();
      await afterRender(before, () => page.select('#event', String(index)));
      result.sleep_share = await search('sleep_part');
      result.pipe_share = await search('pipe_part');
      result.lanes = await page.$$eval('#timeline .lane-name', (names) => names.map((name) => name.textContent));
      result.states = await page.$$eval('#timeline-legend [data-state]', (entries) =>
        Object.fromEntries(entries.map((entry) => [entry.dataset.state, Number(entry.dataset.share)])));
      result.screenshots.push(await screenshot('offcpu'));
    }
    // Wall time (a recording with on-CPU clock samples too): both at once.
    const wall = await page.$$eval('#event option', (options) =>
      Number((options.find((option) => option.textContent.startsWith('wall-time')) || { value: -1 }).value));
    result.wall_index = wall;
    if (wall >= 0) {
      const before = await renders();
      await afterRender(before, () => page.select('#event', String(wall)));
      result.wall_sleep_share = await search('sleep_part');
      result.wall_pipe_share = await search('pipe_part');
      result.wall_states = await page.$$eval('#timeline-legend [data-state]', (entries) =>
        Object.fromEntries(entries.map((entry) => [entry.dataset.state, Number(entry.dataset.share)])));
      if (!url.startsWith('file:')) result.wall_lane_weights = await page.evaluate(async () => {
        const params = new URLSearchParams(location.hash.slice(1));
        const answer = await (await fetch(`api/timeline?event=${params.get('e')}&buckets=10`)).json();
        return answer.threads.map((thread) => thread.weight);
      });
      result.screenshots.push(await screenshot('wall'));
    }
  } else if (mode === 'diff') {
    result.diff_tab_shown = await page.$eval('#tab-diff', (tab) => !tab.hidden);
    const before = await renders();
    await afterRender(before, () => page.click('#tab-diff'));
    result.frame_deltas = await page.$$eval('.frame', (frames) => Object.fromEntries(
      frames.filter((frame) => frame.dataset.delta !== undefined)
        .map((frame) => [frame.dataset.name, Number(frame.dataset.delta)])));
    result.frame_hues = await page.$$eval('.frame', (frames) => Object.fromEntries(
      frames.map((frame) => [frame.dataset.name, frame.style.getPropertyValue('--diff-hue')])));
    const diffTable = () => page.$$eval('#diff-table tbody tr', (rows) => rows.map((row) => ({
      name: row.dataset.name, delta: Number(row.dataset.delta), text: row.children[4].textContent,
      p_value: Number(row.dataset.pValue), significant: row.dataset.significant === 'true',
    })));
    const diffSamples = () => page.$eval('#diff-legend', (legend) => ({
      base: Number(legend.dataset.baseSamples), current: Number(legend.dataset.newSamples),
    }));
    result.table = await diffTable();
    result.diff_samples = await diffSamples();
    result.screenshots.push(await screenshot('diff'));
    // The first half of the base recording's span: both sides' first halves are compared.
    const span = await page.evaluate(async () => {
      const summary = await (await fetch('api/summary')).json();
      return (summary.last_time - summary.first_time) / 1e6;
    });
    const beforeRange = await renders();
    await afterRender(beforeRange, () => page.evaluate((to) => {
      document.getElementById('range-from').value = '0';
      const last = document.getElementById('range-to');
      last.value = String(to);
      last.dispatchEvent(new Event('change'));
    }, span / 2));
    result.half_table = await diffTable();
    result.half_samples = await diffSamples();
    result.screenshots.push(await screenshot('diff-range'));
  } else if (mode === 'stack') {
    await page.click('#tab-stack');
    await page.waitForFunction(() => Number(document.body.dataset.stackCharts || 0) > 0, { timeout: 60000 });
    result.segments = await page.evaluate(() => stackSegments.map((segment) =>
      ({ name: segment.name, depth: segment.depth, x0: segment.x0, x1: segment.x1 })));
    result.label = await page.$eval('#stack-chart-label', (element) => element.textContent);
    result.hash = await page.evaluate(() => location.hash);
    result.screenshots.push(await screenshot('stack'));
  } else if (mode === 'deep') {
    // Where the root ("all") is on the screen, and how tall the graph is.
    const place = () => page.evaluate(() => {
      const root = [...document.querySelectorAll('.frame')].find((frame) => frame.dataset.name === 'all');
      const box = root.getBoundingClientRect();
      return { top: box.top, bottom: box.bottom, screen: window.innerHeight,
        graph: document.getElementById('graph').getBoundingClientRect().height };
    });
    result.flame = await place();
    result.screenshots.push(await screenshot('deep-flame'));
    const before = await renders();
    await afterRender(before, () => page.click('#tab-icicle'));
    result.icicle = await place();
    result.screenshots.push(await screenshot('deep-icicle'));
  } else if (mode === 'names') {
    // Every frame's label and the function name it stands for.
    result.frames = await page.$$eval('.frame', (frames) =>
      frames.map((frame) => ({ text: frame.textContent, name: frame.dataset.name })));
    // The warnings stay after a frame is hovered.
    await page.hover('.frame');
    result.warnings = await page.$$eval('#warnings div', (lines) =>
      lines.map((line) => ({ text: line.textContent, share: Number(line.dataset.share) })));
    result.screenshots.push(await screenshot('names'));
  } else if (mode === 'hostile') {
    result.lane_names = await page.$$eval('#timeline .lane-name', (names) => names.map((name) => name.textContent));
    result.images = await page.$$eval('img', (images) => images.length);
    result.frames_with_markup = await page.$$eval('.frame', (frames) =>
      frames.filter((frame) => frame.children.length !== 0).length);
    await page.click('#tab-tree');
    result.screenshots.push(await screenshot('hostile'));
  }
  result.page_errors = pageErrors;
  result.dialogs = dialogs;
  process.stdout.write(JSON.stringify(result) + '\n');
  await finish(0);
} catch (error) {
  process.stderr.write(`check_viewer: ${error.stack || error}\n`);
  await finish(1);
}
