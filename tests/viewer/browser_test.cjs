// tests/viewer/browser_test.cjs: opens pages written by `gpuspy view` in headless chromium (playwright-core,
// Debian's /usr/bin/chromium) and checks what a user sees against `gpuspy report --format json` of the same
// capture: no console errors and no network; headline numbers, findings and tables; a timeline track per
// thread and stream, drawn; zoom (keys, wheel) and pan change the visible range; clicking a call shows its
// stack and GPU work; capture strings stay text (no <img>, no dialog); the GPU busy % as its basis says
// (an estimate with its range), untimed GPU work drawn as estimated with its hover. Saves a full-page screenshot.
// Usage: PLAYWRIGHT_CORE=DIR node browser_test.cjs PAGE.html REPORT.json SHOT.png [PAGE REPORT SHOT]...
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

const HOSTILE = '<img src=x onerror=alert(1)>';
let failures = 0;
function check(ok, what, detail) {
  console.log((ok ? '  ok   ' : '  FAIL ') + what + (ok || detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  if (!ok) failures++;
}

// The columns of "gpuspy.timeline/2" with a value per row, decoded as viewer/README.md says (on its own,
// not with the viewer's code): times are differences to the row before; *_shapes hold what repeats.
function decode(t) {
  const running = (deltas) => { let at = 0; return deltas.map((d) => (at += d)); };
  const expand = (section, shapes) => Object.fromEntries(Object.keys(shapes).map((f) => [f, section.shape.map((s) => shapes[f][s])]));
  const calls = Object.assign(expand(t.calls, t.call_shapes), { begin: running(t.calls.begin), dur: t.calls.dur, seq: running(t.calls.seq) });
  let x = 0;
  calls.bytes = calls.category.map((c) => (c === 1 ? t.calls.bytes[x++] : 0));
  check(x === t.calls.bytes.length, 'one bytes entry per transfer call', [x, t.calls.bytes.length]);
  const gpu = Object.assign(expand(t.gpu, t.gpu_shapes), { begin: running(t.gpu.begin), dur: t.gpu.dur, call: t.gpu.call });
  return Object.assign({}, t, { calls: calls, gpu: gpu, nvtx: Object.assign({}, t.nvtx, { begin: running(t.nvtx.begin) }) });
}

async function checkPage(browser, htmlPath, reportPath, shotPath) {
  console.log('page ' + htmlPath);
  const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [], requests = [];
  let dialogs = 0;
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => { dialogs++; d.dismiss().catch(() => {}); });
  page.on('request', (r) => { if (!/^(file|data|about):/.test(r.url())) requests.push(r.url()); });

  await page.goto('file://' + path.resolve(htmlPath));
  await page.waitForFunction(() => window.gpuspyViewer && window.gpuspyViewer.ready, null, { timeout: 20000 });
  const data = await page.evaluate(() => JSON.parse(document.getElementById('gpuspy-data').textContent));
  check(data.timeline.schema === 'gpuspy.timeline/2', 'the page embeds gpuspy.timeline/2', data.timeline.schema);
  const tl = decode(data.timeline);

  // Headline numbers: the raw value behind each card, and a formatted text.
  const cards = await page.$$eval('#headline .card', (cs) => Object.fromEntries(cs.map((c) => [c.dataset.key, { raw: Number(c.dataset.raw), text: c.querySelector('.value').textContent }])));
  const sum = (list, k) => (list || []).reduce((a, x) => a + x[k], 0);
  check(cards.launches && cards.launches.raw === report.launches.count, 'kernel launches card = report launches.count', [cards.launches, report.launches.count]);
  check(cards.bytes && cards.bytes.raw === sum(report.transfers, 'bytes'), 'bytes card = sum of report transfers bytes', cards.bytes);
  check(cards.blocked_ns && cards.blocked_ns.raw === sum(report.syncs, 'blocked_ns'), 'blocked card = sum of report syncs blocked_ns', cards.blocked_ns);
  check(cards.cuda_api_ns && cards.cuda_api_ns.raw === sum(report.processes, 'cuda_api_ns'), 'CUDA time card = report cuda_api_ns', cards.cuda_api_ns);
  check(Object.values(cards).every((c) => c.text.trim().length > 0 && !/NaN|undefined/.test(c.text)), 'every card shows a number', cards);
  const verdict = await page.$eval('#verdict', (p) => p.textContent);
  check(verdict.includes(cards.wall_ns.text) && verdict.includes(cards.blocked_ns.text) && !/NaN|undefined/.test(verdict),
        'the summary sentence states the wall and blocked times', verdict);

  // GPU busy: the busiest device's busy % as its busy_basis says it rests on. An estimate (untimed
  // operations placed on the device timeline) reads "~62.0% (55.0-70.0%)" with a line on how many were
  // placed by inference, in the card and the summary sentence; never the old "at least ... not timed".
  const busyCard = await page.$eval('#headline .card[data-key="busy_pct"]', (c) => ({ value: c.querySelector('.value').textContent,
    sub: (c.querySelector('.sub') || {}).textContent || '', basis: c.dataset.basis, min: Number(c.dataset.min), max: Number(c.dataset.max),
    estimatedOps: Number(c.dataset.estimatedOps) }));
  const busiest = (report.devices || []).reduce((a, d) => (!a || d.busy_pct > a.busy_pct ? d : a), null);
  if (busiest) {
    check(busyCard.basis === busiest.busy_basis && busyCard.min === busiest.busy_pct_min && busyCard.max === busiest.busy_pct_max,
          'the busy card reads the busiest device\'s busy_basis and interval', [busyCard, busiest]);
    const p1 = (v) => v.toFixed(1);
    if (busiest.busy_basis === 'estimated') {
      const wide = busiest.busy_pct_max - busiest.busy_pct_min >= 1;
      const want = '~' + p1(busiest.busy_pct) + '%' + (wide ? ' (' + p1(busiest.busy_pct_min) + '\u2013' + p1(busiest.busy_pct_max) + '%)' : '');
      check(busyCard.value === want, 'an estimated busy % reads ' + want, busyCard.value);
      check(busyCard.estimatedOps === busiest.estimated_ops && /placed by inference/.test(busyCard.sub),
            'its sub-line says how many operations were placed by inference', busyCard);
      check(verdict.includes('busy about ' + want.slice(1)) && /placed by inference/.test(verdict),
            'the summary sentence gives the estimate with its range', verdict);
    } else {
      check(busyCard.value === (busiest.busy_basis === 'upper_bound' ? '\u2264 ' : '') + p1(busiest.busy_pct) + '%',
            'a ' + busiest.busy_basis + ' busy % reads as such', busyCard.value);
    }
    check(!/not timed/.test(busyCard.sub) || /placed by inference/.test(busyCard.sub), 'no "at least: ... not timed" wording', busyCard.sub);
    check(!busyCard.value.startsWith('\u2265'), 'the busy % is never called a lower bound', busyCard.value);
  }

  // Findings, in the report's order, each opening its call sites and evidence.
  const findings = await page.$$eval('#findings details.finding', (ds) => ds.map((d) => ({ rule: d.dataset.rule, savings: Number(d.dataset.savings),
    sites: d.querySelectorAll('details.site').length, evidence: Array.from(d.querySelectorAll('table.kv td[data-raw]')).map((td) => Number(td.dataset.raw)) })));
  check(JSON.stringify(findings.map((f) => [f.rule, f.savings])) ===
        JSON.stringify(report.findings.map((f) => [f.rule, f.estimated_savings_ns])), 'findings = report findings (rule, savings)', findings);
  report.findings.forEach((f, i) => {
    if (!findings[i]) return;
    check(findings[i].sites === f.callsites.length, 'finding ' + f.rule + ' lists its ' + f.callsites.length + ' call sites', findings[i].sites);
    check(JSON.stringify(findings[i].evidence) === JSON.stringify(Object.values(f.evidence)), 'finding ' + f.rule + ' shows its evidence', findings[i].evidence);
  });
  // A saving that is a bound reads as one, per finding and in the summary sentence.
  const savingTexts = await page.$$eval('#findings details.finding span.saving', (ss) => ss.map((s) => s.textContent));
  report.findings.forEach((f, i) => {
    if (!f.estimated_savings_ns) return;
    const word = f.estimated_savings_bound === 'at_most' ? 'saves at most ' : f.estimated_savings_bound === 'at_least' ? 'saves at least ' : 'saves ~';
    check(String(savingTexts[i]).startsWith(word), 'finding ' + f.rule + ' reads its saving as ' + f.estimated_savings_bound, savingTexts[i]);
  });
  // The total counts, of findings on the same calls (overlaps), the one with the largest saving: only a
  // bound among those is the summary's to mention.
  const outdone = (f) => (f.overlaps || []).some((r) => report.findings.some((g) => g.rule === r &&
    (g.estimated_savings_ns > f.estimated_savings_ns || (g.estimated_savings_ns === f.estimated_savings_ns &&
      report.findings.indexOf(g) < report.findings.indexOf(f)))));
  const bounded = report.findings.some((f) => f.estimated_savings_ns > 0 && !outdone(f) &&
    ['at_most', 'at_least'].includes(f.estimated_savings_bound));
  check(report.findings_savings_ns <= report.findings.reduce((a, f) => a + f.estimated_savings_ns, 0) &&
        (/counting once the calls/.test(verdict) === report.findings.some((f) => (f.overlaps || []).length)),
        'the summary\'s saving counts findings on the same calls once, and says so', verdict);
  check(bounded === /(upper|lower) bound \(see each finding\)/.test(verdict), 'the summary says which part of the saving is a bound (' + bounded + ')', verdict);
  if (findings.length > 1) {
    await page.click('#findings details.finding:nth-of-type(2) > summary');
    check(await page.$eval('#findings details.finding:nth-of-type(2)', (d) => d.open), 'a finding opens on click');
  }

  // Tables: the kernels, transfers and syncs of the report, and sorting.
  const table = (name) => page.$$eval('.table-wrap[data-table="' + name + '"] tbody tr', (rs) => rs.map((r) => Array.from(r.cells).map((c) => c.dataset.raw)));
  const kernels = await table('kernels');
  check(kernels.length === report.kernels.length && report.kernels.every((k) => kernels.some((r) => r[0] === k.name && Number(r[1]) === k.count && Number(r[2]) === k.gpu_ns)),
        'kernels table = report kernels (name, launches, GPU time)', kernels);
  const transfers = await table('transfers');
  check(transfers.length === report.transfers.length && report.transfers.every((t) => transfers.some((r) => r[0] === t.direction && Number(r[3]) === t.count && Number(r[4]) === t.bytes)),
        'transfers table = report transfers (direction, count, bytes)', transfers);
  // A GPU time that is only an upper bound (a blocking copy on an idle stream) reads "\u2264 " in the
  // transfers table, and only there; its bandwidth from the GPU, a lower bound, "\u2265 ".
  const transferText = await page.$$eval('.table-wrap[data-table="transfers"] tbody tr', (rs) => rs.map((r) => Array.from(r.cells).map((c) => c.textContent)));
  check(report.transfers.every((t) => transferText.some((r) => r[0] === t.direction && r[1] === t.host_memory && r[2] === t.mode &&
          r[6].startsWith('\u2264 ') === (t.upper_bound_count > 0) && r[7].startsWith('\u2265 ') === (t.upper_bound_count > 0 && t.gbps_basis === 'gpu'))),
        'transfers table marks the GPU times that are upper bounds, and only those', transferText);
  const syncs = await table('syncs');
  check(syncs.length === report.syncs.length && report.syncs.every((s) => syncs.some((r) => r[0] === s.display && Number(r[3]) === s.count && Number(r[4]) === s.blocked_ns)),
        'syncs table = report syncs (api, count, blocked)', syncs);
  await page.click('#tabs button[data-table="kernels"]');
  await page.click('.table-wrap[data-table="kernels"] th:nth-child(2)');
  const sorted = (await table('kernels')).map((r) => Number(r[1]));
  check(sorted.every((v, i) => i === 0 || sorted[i - 1] >= v), 'clicking a column sorts the table', sorted);
  await page.click('#tabs button[data-table="transfers"]');

  // Timeline: a track per thread and per stream, each with something drawn in its row.
  const state = await page.evaluate(() => ({ tracks: window.gpuspyViewer.tracks, visible: window.gpuspyViewer.visible }));
  const threadTids = new Set(tl.calls.track.map((t) => tl.tracks[t].tid));
  check(state.tracks.filter((t) => t.kind === 'thread').length === tl.tracks.filter((t) => t.kind === 'thread').length &&
        state.tracks.filter((t) => t.kind === 'thread').length >= threadTids.size, 'a timeline track per host thread', state.tracks);
  const streams = new Set(tl.gpu.track);
  check(state.tracks.filter((t) => t.kind === 'stream').length === streams.size && streams.size >= 1, 'a timeline track per GPU stream', state.tracks);
  const drawn = await page.evaluate(() => {
    const c = document.getElementById('timeline');
    const ctx = c.getContext('2d');
    const dpr = c.width / c.getBoundingClientRect().width;
    return window.gpuspyViewer.tracks.map((t) => {
      const img = ctx.getImageData(Math.floor(240 * dpr), Math.floor(t.top * dpr), Math.floor(c.width - 240 * dpr), Math.max(1, Math.floor(t.height * dpr)));
      let n = 0;
      for (let i = 0; i < img.data.length; i += 4) if (img.data[i + 3] > 0 && (img.data[i] < 200 || img.data[i + 1] < 200 || img.data[i + 2] < 200)) n++;
      return n;
    });
  });
  check(drawn.every((n) => n > 0), 'every track has something drawn in its row', drawn);

  // GPU work the budget left untimed is drawn where the device timeline placed it, as estimated
  // (gpu_shapes.bound 2): on its stream's track, counted there, hatched, and named so on hover.
  const estimatedRows = tl.gpu.bound.map((b, i) => (b === 2 ? i : -1)).filter((i) => i >= 0);
  const est = await page.evaluate(() => ({ total: window.gpuspyViewer.estimatedSpans, perTrack: window.gpuspyViewer.tracks.map((t) => t.estimated) }));
  check(est.total === estimatedRows.length, 'the page draws every estimated GPU span as estimated (' + estimatedRows.length + ')', est.total);
  check(JSON.stringify(est.perTrack) === JSON.stringify(tl.tracks.map((t, ti) => estimatedRows.filter((g) => tl.gpu.track[g] === ti).length)),
        'each stream track draws its own estimated spans', est.perTrack);
  const estimatedOps = (report.devices || []).reduce((a, d) => a + (d.estimated_ops || 0), 0);
  check((estimatedOps > 0) === (estimatedRows.length > 0), 'estimated spans exactly when the report estimates (' + estimatedOps + ' operations)',
        estimatedRows.length);
  if (estimatedRows.length) {
    // The longest estimated span, hovered: the tooltip says it was placed by inference.
    const g = estimatedRows.reduce((a, i) => (tl.gpu.dur[i] > tl.gpu.dur[a] ? i : a), estimatedRows[0]);
    const p = await page.evaluate((k) => window.gpuspyViewer.pointOfGpu(k), g);
    await page.mouse.move(p.x, p.y);
    await page.waitForTimeout(50);
    const tip = await page.$eval('#tooltip', (t) => ({ hidden: t.hidden, text: t.textContent }));
    check(!tip.hidden && tip.text.includes('estimated (placed by inference)') && tip.text.includes(tl.strings[tl.gpu.name[g]]),
          'hovering an estimated GPU span says it is estimated (placed by inference)', tip);
    await page.evaluate(() => window.gpuspyViewer.reset());
  }
  // Measured spans never say so.
  const measured = tl.gpu.bound.findIndex((b) => b !== 2);
  if (measured >= 0 && tl.gpu.dur[measured] > 0) {
    const p = await page.evaluate((k) => window.gpuspyViewer.pointOfGpu(k), measured);
    await page.mouse.move(p.x, p.y);
    await page.waitForTimeout(50);
    const tip = await page.$eval('#tooltip', (t) => ({ hidden: t.hidden, text: t.textContent }));
    check(!tip.hidden && !tip.text.includes('estimated'), 'hovering a measured GPU span does not say estimated', tip);
    await page.evaluate(() => window.gpuspyViewer.reset());
  }

  // The critical path (the report's replay): each lane's share is its parts' share of the replayed wall, the
  // shares of a process add up to no more than the whole, and the threads the report names off it are marked.
  const tracks = await page.evaluate(() => window.gpuspyViewer.tracks);
  for (const cp of report.critical_path || []) {
    const mine = tracks.filter((t) => t.pid === cp.pid);
    const total = mine.reduce((a, t) => a + t.critical, 0);
    check(total <= 1.01, 'pid ' + cp.pid + ': the lanes\' shares of the critical path add up to at most the whole', total);
    for (const part of cp.parts.filter((x) => x.kind === 'host' && x.ns > 0.01 * cp.wall_ns)) {
      const t = mine.find((x) => x.kind === 'thread' && x.tid === part.tid);
      check(t && Math.abs(t.critical - part.ns / cp.wall_ns) < 0.001, 'thread ' + part.tid + ' shows its share of the critical path', [t, part]);
    }
    for (const part of cp.parts.filter((x) => x.kind === 'device' && x.ns > 0.01 * cp.wall_ns))
      check(mine.some((x) => x.kind === 'stream' && x.device === part.device && x.critical >= part.ns / cp.wall_ns - 0.001),
            'the stream of ' + part.what + ' shows its share of the critical path', part);
    for (const off of cp.off_path || [])
      check(mine.some((x) => x.kind === 'thread' && x.tid === off.tid && x.off_path && x.critical === 0),
            'thread ' + off.tid + ' is marked off the critical path', off);
  }

  // GPU memory: a row per process and memory space of the report, its peak drawn and named on hover.
  const memRows = (report.memory || []).filter((m) => m.series && m.series.length);
  const mem = await page.evaluate(() => window.gpuspyViewer.memoryTracks);
  check(mem.length === memRows.length && memRows.every((m) => mem.some((t) => t.pid === m.pid && t.space === m.space &&
        t.device === m.device && t.peak_bytes === m.peak_bytes && t.points === m.series.length && t.height > 0 &&
        t.held_points === (m.held_series || []).length)),
        'a memory row per report memory space, with its peak (' + memRows.length + ')', mem);
  for (let i = 0; i < mem.length; i++) {
    const p = await page.evaluate((k) => window.gpuspyViewer.pointOfMemoryPeak(k), i);
    await page.mouse.move(p.x, p.y);
    await page.waitForTimeout(50);
    const tip = await page.$eval('#tooltip', (t) => ({ hidden: t.hidden, text: t.textContent }));
    const m = memRows.find((r) => r.pid === mem[i].pid && r.space === mem[i].space && r.device === mem[i].device);
    const holder = m && m.at_peak.length && m.at_peak[0].callsite !== null ? report.callsites[m.at_peak[0].callsite].label : '';
    check(!tip.hidden && tip.text.startsWith('GPU memory') && tip.text.includes('peak') && tip.text.includes(holder),
          'hovering memory row ' + i + ' at its peak says what is in use and who held the peak', tip);
    if (m && (m.pools || []).length)
      check(tip.text.includes('stream-ordered pools keep unused') && tip.text.includes(m.pools[0].pool + ' pool'),
            'hovering memory row ' + i + ' names what its stream-ordered pools keep', tip);
  }
  await page.evaluate(() => { window.gpuspyViewer.reset(); window.scrollTo(0, 0); });

  // The report's per-stream rows, in their own table.
  const streamRows = await table('streams');
  check(streamRows.length === (report.streams || []).length &&
        (report.streams || []).every((x) => streamRows.some((r) => r[0] === x.name && Number(r[3]) === x.ops && Number(r[4]) === x.estimated_ops)),
        'GPU streams table = report streams (name, ops, estimated ops)', streamRows);

  // Zoom and pan.
  const span = (v) => v.end_ns - v.begin_ns;
  const v0 = state.visible;
  const visible = async () => { await page.waitForTimeout(50); return page.evaluate(() => window.gpuspyViewer.visible); };
  await page.focus('#timeline');
  await page.keyboard.press('+');
  const v1 = await visible();
  check(span(v1) < span(v0) * 0.75, '"+" zooms in (the visible range shrinks)', [v0, v1]);
  await page.keyboard.press('+');
  await page.keyboard.press('ArrowRight');
  const v2 = await visible();
  check(v2.begin_ns > v1.begin_ns && span(v2) < span(v1), 'the right arrow pans later', [v1, v2]);
  const box = await page.$eval('#timeline', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  await page.mouse.move(box.x + box.w * 0.5, box.y + 40);
  await page.mouse.down();
  await page.mouse.move(box.x + box.w * 0.3, box.y + 40, { steps: 4 });
  await page.mouse.up();
  const v3 = await visible();
  check(v3.begin_ns > v2.begin_ns && Math.abs(span(v3) - span(v2)) < 1, 'dragging left pans later', [v2, v3]);
  await page.mouse.move(box.x + box.w * 0.6, box.y + 40);
  await page.mouse.wheel(0, -400);
  const v4 = await visible();
  check(span(v4) < span(v3) * 0.8, 'the wheel zooms in', [v3, v4]);
  await page.mouse.wheel(0, 400);
  const v5 = await visible();
  check(span(v5) > span(v4) * 1.2, 'the wheel zooms out', [v4, v5]);
  await page.keyboard.press('-');
  const v6 = await visible();
  check(span(v6) > span(v5) * 1.5, '"-" zooms out', [v5, v6]);

  // Hover and click a call that caused timed GPU work.
  const target = tl.gpu.call.find((c) => c >= 0 && tl.stacks[tl.calls.stack[c]].length > 0);
  check(target !== undefined, 'the capture has a call with a stack and timed GPU work');
  if (target !== undefined) {
    const p = await page.evaluate((k) => window.gpuspyViewer.pointOfCall(k), target);
    await page.mouse.move(p.x, p.y);
    await page.waitForTimeout(50);
    const tip = await page.$eval('#tooltip', (t) => ({ hidden: t.hidden, text: t.textContent }));
    check(!tip.hidden && tip.text.includes(tl.strings[tl.calls.name[target]]), 'hovering a call shows a tooltip naming it', tip);
    await page.mouse.click(p.x, p.y);
    await page.waitForTimeout(50);
    const det = await page.evaluate(() => ({
      call: Number((document.querySelector('#details h3') || {}).dataset?.call),
      title: (document.querySelector('#details h3') || {}).textContent,
      frames: Array.from(document.querySelectorAll('#details-stack li')).map((li) => li.textContent),
      work: document.querySelectorAll('#details .work').length,
      selected: window.gpuspyViewer.selectedCall,
    }));
    const frames = tl.stacks[tl.calls.stack[target]].map((f) => tl.frames[f][0]);
    check(det.call === target && det.selected === target, 'clicking a call selects it', det);
    check(det.frames.length === frames.length && frames.every((f) => det.frames.some((t) => t.startsWith(f))), 'the details show its stack', [det.frames, frames]);
    check(det.work === tl.gpu.call.filter((c) => c === target).length && det.work > 0, 'the details show the GPU work it caused', det);
  }

  // Flame graph of blocked time.
  const flame = await page.$eval('#flame', (f) => ({ total: Number(f.dataset.total), nodes: f.querySelectorAll('.flame-node').length }));
  const blocked = tl.calls.dur.reduce((a, d, i) => a + (tl.calls.blocked[i] ? d : 0), 0);
  check(flame.total === blocked && (blocked === 0 || flame.nodes > 1), 'the flame graph holds all blocked time', [flame, blocked]);
  check(Math.abs(blocked - sum(report.syncs, 'blocked_ns')) === 0, 'its total = the report syncs blocked time', [blocked, sum(report.syncs, 'blocked_ns')]);

  // Hostile strings stay text.
  const dom = await page.evaluate((h) => ({
    imgs: document.querySelectorAll('img').length,
    textHasName: document.body.textContent.includes(h),
  }), HOSTILE);
  check(dom.imgs === 0, 'no <img> element in the page', dom);
  check(dialogs === 0, 'no dialog opened', dialogs);
  if (tl.strings.includes(HOSTILE)) check(dom.textHasName, 'the hostile kernel name is shown as text', dom);

  check(errors.length === 0, 'no console errors', errors);
  check(requests.length === 0, 'no network requests', requests);
  await page.evaluate(() => window.gpuspyViewer.reset());
  await page.waitForTimeout(100);
  await page.screenshot({ path: shotPath, fullPage: true });
  console.log('  screenshot ' + shotPath);
  await page.close();
}

(async () => {
  const args = process.argv.slice(2);
  const t0 = Date.now();
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  try {
    for (let i = 0; i + 2 < args.length; i += 3) await checkPage(browser, args[i], args[i + 1], args[i + 2]);
  } finally {
    await browser.close();
  }
  console.log((failures ? 'FAILED: ' + failures + ' checks' : 'all checks passed') + ' in ' + ((Date.now() - t0) / 1000).toFixed(1) + ' s');
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
