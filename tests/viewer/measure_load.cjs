// tests/viewer/measure_load.cjs: how fast pages written by `gpuspy view` load and redraw in headless
// chromium: wall time to ready, CPU time the browser spent to get there (on a loaded machine the fairer
// figure), the viewer's own steps (window.gpuspyViewer.loadMs) and the time of each redraw while zooming
// and panning. A measurement, not a test: it asserts nothing and no ctest runs it. For a capture of a
// million records: bench/gen_capture 1000000 big.stream big.gspy; gpuspy view big.gspy -o big.html.
// Usage: PLAYWRIGHT_CORE=DIR node measure_load.cjs PAGE.html... (prints one JSON line per page and run)
//        RUNS=3 runs each page that many times, interleaved.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

// utime + stime of a process and its descendants (here: this node and the browser it started), in ms (Linux /proc; clock ticks of 10 ms).
function treeCpuMs(root) {
  const kids = new Map(), cpu = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = fs.readFileSync('/proc/' + d + '/stat', 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      cpu.set(Number(d), (Number(f[11]) + Number(f[12])) * 10);
      if (!kids.has(Number(f[1]))) kids.set(Number(f[1]), []);
      kids.get(Number(f[1])).push(Number(d));
    } catch (e) { /* the process ended meanwhile */ }
  }
  let sum = 0;
  for (const todo = [root]; todo.length;) {
    const p = todo.pop();
    sum += cpu.get(p) || 0;
    todo.push(...(kids.get(p) || []));
  }
  return sum;
}

async function measure(browser, file) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const cpu0 = treeCpuMs(process.pid), t0 = Date.now();
  await page.goto('file://' + path.resolve(file), { timeout: 300000 });
  await page.waitForFunction(() => window.gpuspyViewer && window.gpuspyViewer.ready, null, { timeout: 300000, polling: 50 });
  const readyMs = Date.now() - t0, cpuMs = treeCpuMs(process.pid) - cpu0;
  // Redraws: show all, zoom in 5 times, pan 5 times, zoom out 5 times; each waits for two frames.
  const r = await page.evaluate(async () => {
    const v = window.gpuspyViewer;
    const frame = () => new Promise((res) => requestAnimationFrame(() => res()));
    const draws = [];
    async function step(fn) { fn(); await frame(); await frame(); draws.push(v.lastDrawMs); }
    await step(() => v.reset());
    for (let i = 0; i < 5; i++) await step(() => v.zoomBy(0.5));
    for (let i = 0; i < 5; i++) await step(() => v.panBy(0.3));
    for (let i = 0; i < 5; i++) await step(() => v.zoomBy(2));
    return { draws: draws, loadMs: v.loadMs, calls: v.calls };
  });
  const sorted = r.draws.slice().sort((a, b) => a - b);
  await page.close();
  return { page: path.basename(file), bytes: fs.statSync(file).size, calls: r.calls, ready_ms: readyMs, cpu_ms: cpuMs,
    steps_ms: r.loadMs, draw_median_ms: +sorted[sorted.length >> 1].toFixed(1), draw_max_ms: +sorted[sorted.length - 1].toFixed(1), errors: errors };
}

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  try {
    for (let run = 0; run < Number(process.env.RUNS || 1); run++)
      for (const f of process.argv.slice(2)) console.log(JSON.stringify(await measure(browser, f)));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
