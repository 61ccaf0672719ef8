// Opens perfscope's exports in real viewers in headless Chromium and prints what the pages show,
// as one JSON object on stdout; tests/cli/browser_cli_test.cpp records the profiles and judges
// the figures. Exit status 77 (ctest's skip) with the reason on stderr when Chromium or the npm
// packages (npm ci in tests/browser, done by scripts/install-deps) cannot be had; 1 when a page
// does not behave.
//
//   node check_exports.mjs speedscope PROFILE.json FUNCTION ARTIFACT_DIR
//       the speedscope app (npm `speedscope`, served from 127.0.0.1) loads PROFILE.json by its
//       #profileURL= hash; in "Left Heavy" the mouse finds FUNCTION's frame on the canvas and its
//       edges (speedscope's hover tooltip names the frame under the pointer); "Sandwich" lists
//       every function with its total and self time as DOM text; FUNCTION "-" skips the frame
//   node check_exports.mjs svg FLAME.svg FUNCTION ARTIFACT_DIR
//       our flame graph (report --format svg) opened as a page: a click on FUNCTION's frame
//       zooms, the Search button's prompt answered with FUNCTION highlights, Escape clears,
//       Ctrl-F searches again, a search too long for the header is shortened, "Reset zoom"
//       restores
//
// Chromium is /usr/bin/chromium unless PERFSCOPE_CHROMIUM names another.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const skip = 77;

function fail(message) {
  process.stderr.write(`check_exports: ${message}\n`);
  process.exit(1);
}

const [mode, input, target, artifacts] = process.argv.slice(2);
if (!['speedscope', 'svg'].includes(mode) || !input || !target || !artifacts) {
  fail('usage: check_exports.mjs speedscope|svg FILE FUNCTION ARTIFACT_DIR');
}
if (!fs.existsSync(input)) fail(`no such file: ${input}`);

const chromium = process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium';
try {
  fs.accessSync(chromium, fs.constants.X_OK);
} catch {
  process.stderr.write(`check_exports: SKIP: no Chromium at ${chromium} (apt-get install chromium, ` +
                       'or set PERFSCOPE_CHROMIUM)\n');
  process.exit(skip);
}
let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch (error) {
  process.stderr.write('check_exports: SKIP: the npm packages are not installed (run ' +
                       `scripts/install-deps, or npm ci in ${path.dirname(new URL(import.meta.url).pathname)}): ` +
                       `${error.message.split('\n')[0]}\n`);
  process.exit(skip);
}

fs.mkdirSync(artifacts, { recursive: true });
const userDataDir = fs.mkdtempSync(path.join(artifacts, 'chromium-profile-'));
const pageErrors = [];
let server = null;
let browser = null;

// Chromium as root in a container: no sandbox; no GPU (speedscope's WebGL runs on SwiftShader,
// which newer Chromiums only use when asked); nothing that reaches out to the network.
async function openBrowser() {
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir,
    timeout: 45000,
    protocolTimeout: 45000,
    args: ['--no-sandbox', '--disable-gpu', '--enable-unsafe-swiftshader', '--disable-quic',
           '--no-first-run', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(30000);
  await page.setViewport({ width: 1200, height: 800 });
  page.on('pageerror', (error) => pageErrors.push(String(error.message || error)));
  return page;
}

// Two animation frames: what the last input event changed has been drawn.
async function settle(page) {
  await page.evaluate(() => new Promise((resolve) => {
    requestAnimationFrame(() => requestAnimationFrame(resolve));
  }));
}

async function screenshot(page, name, shots) {
  const file = path.join(artifacts, name);
  await page.screenshot({ path: file });
  shots.push(file);
}

function serveSpeedscope(profile) {
  const require = createRequire(import.meta.url);
  const app = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release');
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
                  '.json': 'application/json', '.png': 'image/png', '.wasm': 'application/wasm',
                  '.woff2': 'font/woff2', '.ico': 'image/x-icon', '.txt': 'text/plain' };
  server = http.createServer((request, response) => {
    const url = new URL(request.url, 'http://127.0.0.1');
    const name = url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname.slice(1));
    const file = name === 'profile.json' ? profile : path.join(app, path.normalize(name));
    if (file !== profile && !file.startsWith(app + path.sep)) {
      response.writeHead(403);
      response.end();
      return;
    }
    fs.readFile(file, (error, data) => {
      if (error) {
        response.writeHead(404);
        response.end();
        return;
      }
      response.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
      response.end(data);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

// speedscope's hover tooltip (a DOM element beside the flame chart's canvases): "TIME (P%) NAME".
async function hoverAt(page, x, y) {
  await page.mouse.move(x, y);
  await settle(page);
  return page.evaluate(() => {
    const canvases = [...document.querySelectorAll('canvas')];
    const chart = canvases[canvases.length - 1];
    for (const child of chart.parentElement.parentElement.children) {
      if (child.querySelector('canvas')) continue;
      const span = child.querySelector('span');
      if (!span) continue;
      // The name: the text nodes beside the time's span (the file is in a <div> below them).
      const name = [...span.parentElement.childNodes]
        .filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.textContent).join('');
      return { time: span.textContent.trim(), name: name.trim() };
    }
    return null;
  });
}

async function checkSpeedscope(page) {
  const base = await serveSpeedscope(path.resolve(input));
  const shots = [];
  // Not waiting for "load": a file speedscope chokes on stops the page's main thread first.
  await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(`${base}/profile.json`)}`,
                  { waitUntil: 'domcontentloaded' });
  // Loaded: the view tabs are there and the flame chart's canvases with them.
  await page.waitForFunction(() => document.body.innerText.includes('Sandwich') &&
                                   document.querySelectorAll('canvas').length >= 3, { timeout: 20000 })
    .catch((error) => {
      throw new Error(`speedscope did not show the profile within 20 s (a hung page?): ${error.message}`);
    });
  const title = await page.evaluate(() => document.title);
  const toolbar = await page.evaluate(() => document.body.innerText.split('\n').slice(0, 3).join(' '));

  // Left Heavy: the heaviest stacks leftmost, widths in proportion to weight.
  await page.keyboard.press('2');
  await settle(page);
  const chart = await page.evaluate(() => {
    const canvases = [...document.querySelectorAll('canvas')];
    const r = canvases[canvases.length - 1].getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, height: r.height };
  });
  // The frame's row: down the chart at a few places across until the tooltip names it.
  let found = null;
  for (const fraction of target === '-' ? [] : [0.01, 0.25, 0.5, 0.75, 0.99]) {
    const x = chart.left + fraction * chart.width;
    for (let y = chart.top + 2; y < chart.top + Math.min(chart.height, 400) && !found; y += 4) {
      const label = await hoverAt(page, x, y);
      if (label && label.name === target) found = { x, y, label };
    }
    if (found) break;
  }
  let leftHeavy = null;
  if (found) {
    // Its edges: where the tooltip stops naming it, to a pixel.
    const inside = async (x) => {
      const label = await hoverAt(page, x, found.y);
      return label !== null && label.name === target;
    };
    const edge = async (from, to) => {  // inside(from), !inside(to)
      while (Math.abs(to - from) > 1) {
        const middle = (from + to) / 2;
        if (await inside(middle)) from = middle; else to = middle;
      }
      return from;
    };
    const chartLeft = chart.left, chartRight = chart.left + chart.width - 1;
    const left = (await inside(chartLeft)) ? chartLeft : await edge(found.x, chartLeft);
    const right = (await inside(chartRight)) ? chartRight : await edge(found.x, chartRight);
    await page.mouse.move(found.x, found.y);
    await settle(page);
    await screenshot(page, 'speedscope-left-heavy.png', shots);
    leftHeavy = {
      tooltip: found.label,
      left_px: left - chart.left,
      right_px: right - chart.left,
      chart_width_px: chart.width,
      width_percent: (100 * (right - left + 1)) / chart.width,
    };
  }

  // Sandwich: a table of functions (DOM text), total and self with their bars' widths.
  await page.mouse.move(1, 1);
  await page.keyboard.press('3');
  await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'));
  await settle(page);
  await screenshot(page, 'speedscope-sandwich.png', shots);
  const sandwich = await page.evaluate(() => {
    const bar = (cell) => {
      const div = cell.querySelector('div > div');
      return div ? parseFloat(div.style.width) : null;
    };
    // The function rows: three cells, time bars in the first (the profile chooser's rows, when
    // the file has several profiles, are a table too, without bars).
    return [...document.querySelectorAll('tr')]
      .filter((row) => row.cells.length === 3 && bar(row.cells[0]) !== null)
      .map((row) => ({
        name: row.cells[2].textContent.trim(),
        file: row.cells[2].getAttribute('title') || '',
        total: row.cells[0].firstChild ? row.cells[0].firstChild.textContent.trim() : '',
        self: row.cells[1].firstChild ? row.cells[1].firstChild.textContent.trim() : '',
        total_percent: bar(row.cells[0]),
        self_percent: bar(row.cells[1]),
      }));
  });
  return { title, toolbar, left_heavy: leftHeavy, sandwich, screenshots: shots };
}

async function checkSvg(page) {
  const shots = [];
  await page.goto(`file://${path.resolve(input)}`);
  // A file that is not well-formed XML: Chromium draws the part before the error and an error box
  // (<parsererror>) instead of the flame graph.
  const parseError = await page.evaluate(() => {
    const error = document.getElementsByTagName('parsererror')[0];
    return error ? error.textContent : document.documentElement.localName !== 'svg' ? 'not an SVG document' : '';
  });
  if (parseError) {
    throw new Error(`Chromium does not read ${input} as SVG: ${parseError.replace(/\s+/g, ' ').trim()}`);
  }
  await page.waitForSelector('g.f');
  const readFrames = () => page.evaluate(() => {
    return [...document.getElementsByClassName('f')].map((g) => {
      const title = g.getElementsByTagName('title')[0].textContent;
      const cut = title.lastIndexOf(' (');
      const rect = g.getElementsByTagName('rect')[0];
      return {
        name: cut < 0 ? title : title.substring(0, cut),
        depth: Number(g.getAttribute('data-d')),
        shown: getComputedStyle(g).display !== 'none',
        above: g.classList.contains('above'),
        x: Number(rect.getAttribute('x')),
        width: Number(rect.getAttribute('width')),
        fill: rect.getAttribute('fill'),
        highlighted: rect.getAttribute('fill') !== rect.getAttribute('data-fill'),
        text: g.getElementsByTagName('text')[0].textContent,
        // Where the label ends as drawn (fonts differ: the SVG guesses 12 px monospace's width).
        text_right: (() => {
          const label = g.getElementsByTagName('text')[0];
          if (!label.textContent || getComputedStyle(g).display === 'none') return null;
          const box = label.getBBox();
          return box.x + box.width;
        })(),
      };
    });
  });
  // The header's texts (title, subtitle lines, buttons, legend) as the browser laid them out.
  const readHeader = () => page.evaluate(() => {
    return [...document.querySelectorAll('svg > text')].map((text) => {
      const box = text.getBBox();
      return { id: text.id, text: text.textContent, left: box.x, right: box.x + box.width,
               top: box.y, bottom: box.y + box.height };
    });
  });
  const page_width = await page.evaluate(() => Number(document.documentElement.getAttribute('data-width')));
  const padding = await page.evaluate(() => Number(document.documentElement.getAttribute('data-pad')));
  const before = await readFrames();
  const header = await readHeader();
  const index = before.findIndex((frame) => frame.name === target);
  if (index < 0) throw new Error(`no frame named ${target} in ${input}`);
  await screenshot(page, 'svg-initial.png', shots);

  // A real click on the frame (the pointer at its box's centre: rect or text, both inside it).
  const handles = await page.$$('g.f');
  await handles[index].click();
  await settle(page);
  const zoomed = await readFrames();
  await screenshot(page, 'svg-zoomed.png', shots);

  // Search: the button asks with prompt(); the dialog is answered as a user would type.
  const answer = (dialog) => dialog.accept(target);
  page.once('dialog', answer);
  await page.click('#search');
  await settle(page);
  const matched = await page.$eval('#matched', (element) => element.textContent);
  const searched = await readFrames();
  const searchedHeader = await readHeader();
  await screenshot(page, 'svg-search.png', shots);

  await page.keyboard.press('Escape');
  await settle(page);
  const cleared = await page.$eval('#matched', (element) => element.textContent);
  page.once('dialog', answer);
  await page.keyboard.down('Control');
  await page.keyboard.press('f');
  await page.keyboard.up('Control');
  await settle(page);
  const matchedByKeyboard = await page.$eval('#matched', (element) => element.textContent);

  // A search term too long for the room before the legend: the same frames, the term shortened.
  const longTerm = `${target}|${'no_such_function_'.repeat(8)}`;
  page.once('dialog', (dialog) => dialog.accept(longTerm));
  await page.click('#search');
  await settle(page);
  const matchedLong = await page.$eval('#matched', (element) => element.textContent);
  const longHeader = await readHeader();
  await page.keyboard.press('Escape');

  await page.click('#reset');
  await settle(page);
  const reset = await readFrames();
  return {
    page_width,
    padding,
    target_index: index,
    header,
    searched_header: searchedHeader,
    before,
    zoomed,
    matched,
    searched_highlighted: searched.filter((frame) => frame.highlighted).map((frame) => frame.name),
    cleared,
    matched_by_keyboard: matchedByKeyboard,
    long_term: longTerm,
    matched_long: matchedLong,
    long_header: longHeader,
    reset,
    screenshots: shots,
  };
}

let status = 0;
let page = null;
try {
  page = await openBrowser();
  const result = mode === 'speedscope' ? await checkSpeedscope(page) : await checkSvg(page);
  result.page_errors = pageErrors;
  result.chromium = await browser.version();
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  process.stderr.write(`check_exports: ${mode}: ${error.stack || error}\n`);
  if (page) {
    const file = path.join(artifacts, `${mode}-failure.png`);
    if (await page.screenshot({ path: file }).then(() => true, () => false)) {
      process.stderr.write(`check_exports: the page as it was: ${file}\n`);
    }
  }
  status = 1;
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(status);
