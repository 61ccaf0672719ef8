// For bench/view_benchmark.sh: with headless Chromium already started, runs
// `perfscope view --no-open FILE` and prints, as JSON, the milliseconds from starting it to its
// address (the file read) and to the first painted flame graph, the milliseconds the views take
// to follow a new time range (three ranges), and the viewer's peak RSS (KiB).
//
//   node bench/view_paint.mjs PERFSCOPE FILE
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const [perfscope, file] = process.argv.slice(2);
const require = createRequire(path.join(path.dirname(new URL(import.meta.url).pathname),
  '..', 'tests', 'browser', 'package.json'));
const puppeteer = require('puppeteer-core');
const browser = await puppeteer.launch({
  executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
const page = await browser.newPage();
await page.setViewport({ width: 1400, height: 900 });
await page.goto('about:blank');

const started = performance.now();
const viewer = spawn(perfscope, ['view', '--no-open', file], { stdio: ['ignore', 'pipe', 'inherit'] });
try {
  const url = await new Promise((resolve, reject) => {
    let out = '';
    viewer.stdout.on('data', (chunk) => {
      out += chunk;
      const match = out.match(/http:\/\/127\.0\.0\.1:\d+\/t\/[0-9a-f]+\//);
      if (match) resolve(match[0]);
    });
    viewer.on('exit', (code) => reject(new Error(`perfscope view exited with ${code}`)));
  });
  const serving = performance.now() - started;
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelector('.frame') !== null &&
    Number(document.body.dataset.renders || 0) > 0, { timeout: 120000, polling: 'raf' });
  const firstPaint = performance.now() - started;
  const updates = [];
  // Timed in the page, from the new range to the frame painted after the views were redrawn
  // (puppeteer's own polling would add its round trips: about 200 ms here).
  for (const [from, to] of [['0', '500'], ['500', '1000'], ['', '']]) {
    const ms = await page.evaluate(async (a, b) => {
      const before = Number(document.body.dataset.renders);
      const t0 = performance.now();
      const first = document.getElementById('range-from');
      const last = document.getElementById('range-to');
      first.value = a;
      last.value = b;
      last.dispatchEvent(new Event('change'));
      while (Number(document.body.dataset.renders) <= before) {
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
      return performance.now() - t0;
    }, from, to);
    updates.push(ms);
  }
  const status = fs.readFileSync(`/proc/${viewer.pid}/status`, 'utf8');
  const rss = Number((status.match(/VmHWM:\s+(\d+)/) || [0, 0])[1]);
  process.stdout.write(JSON.stringify({ serving_ms: serving, first_paint_ms: firstPaint,
    range_update_ms: updates, rss_kib: rss }) + '\n');
} finally {
  viewer.kill('SIGINT');
  await browser.close();
}
