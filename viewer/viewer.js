// viewer/viewer.js: the gpuspy page: headline numbers, findings, the timeline (canvas), sortable tables
// and a flame graph of blocked host time, all from the "gpuspy.view/1" JSON in #gpuspy-data (see
// README.md). Every string from the capture reaches the page through textContent, a canvas fillText or
// an attribute property, never as HTML: a kernel may be named "<img src=x onerror=...>".
(function () {
  'use strict';

  // ---- formatting -----------------------------------------------------------------------------

  function fmtNs(ns) {
    ns = Number(ns) || 0;
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(a < 1e4 ? 2 : a < 1e5 ? 1 : 0) + ' \u00b5s';
    if (a < 1e9) return (ns / 1e6).toFixed(a < 1e7 ? 2 : a < 1e8 ? 1 : 0) + ' ms';
    return (ns / 1e9).toFixed(a < 1e10 ? 2 : 1) + ' s';
  }
  function fmtBytes(n) {
    n = Number(n) || 0;
    if (n < 1024) return n + ' B';
    if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
    if (n < 1073741824) return (n / 1048576).toFixed(1) + ' MiB';
    return (n / 1073741824).toFixed(2) + ' GiB';
  }
  function fmtCount(n) {
    return String(Math.round(Number(n) || 0)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function fmtPct(p) { return (Number(p) || 0).toFixed(1) + '%'; }
  function fmtEvidence(name, v) {
    if (/_ns$/.test(name)) return fmtNs(v);
    if (/bytes$/.test(name)) return fmtBytes(v);
    if (/pct$/.test(name)) return fmtPct(v);
    return Number.isInteger(v) ? fmtCount(v) : String(Math.round(v * 100) / 100);
  }

  // ---- DOM helpers: text only ---------------------------------------------------------------------

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function $(id) { return document.getElementById(id); }

  // ---- the data -----------------------------------------------------------------------------------

  const doc = JSON.parse($('gpuspy-data').textContent);
  const report = doc.report;
  const tl = doc.timeline;
  const S = tl.strings;
  const basename = (p) => String(p || '').split('/').pop();

  function frameText(f) {
    // f = [function, file, line, module, app, inlined]
    return f[0] + (f[1] ? ' (' + basename(f[1]) + (f[2] ? ':' + f[2] : '') + ')' : '');
  }

  // ---- header and headline numbers ----------------------------------------------------------------

  function buildHeader() {
    const procs = report.processes || [];
    const cmd = procs.length ? procs[0].command : '';
    $('title').textContent = 'GPU profile of ' + (basename(cmd.split(' ')[0]) || 'a program');
    document.title = 'gpuspy: ' + (basename(cmd.split(' ')[0]) || 'report');
    const parts = [];
    if (procs.length === 1) parts.push(cmd + '  (pid ' + procs[0].pid + ')');
    else parts.push(procs.length + ' processes');
    parts.push('capture ' + doc.source);
    $('subtitle').textContent = parts.join(' \u00b7 ');
    $('footer').textContent = 'Made by gpuspy view from ' + doc.source + ' (' + report.schema + ', ' + tl.schema +
      '). Times are host CLOCK_MONOTONIC; GPU work is placed on the host clock through the calibration of each device.';
  }

  function sum(list, key) { return (list || []).reduce((a, x) => a + (Number(x[key]) || 0), 0); }

  function buildHeadline() {
    const box = $('headline');
    const procs = report.processes || [];
    const wall = procs.reduce((a, p) => Math.max(a, p.wall_ns), 0);
    const api = sum(procs, 'cuda_api_ns');
    const blocked = sum(report.syncs, 'blocked_ns');
    const moved = sum(report.transfers, 'bytes');
    const copies = sum(report.transfers, 'count');
    const launches = report.launches || {};
    const devs = report.devices || [];
    const busy = devs.length ? Math.max.apply(null, devs.map((d) => d.busy_pct)) : 0;
    const saving = sum(report.findings, 'estimated_savings_ns');
    function card(key, value, raw, label, sub, bad) {
      const c = add(box, el('div', 'card' + (bad ? ' bad' : '')));
      c.dataset.key = key;
      c.dataset.raw = String(raw);
      add(c, el('div', 'value', value));
      add(c, el('div', 'label', label));
      if (sub) add(c, el('div', 'sub', sub));
    }
    card('wall_ns', fmtNs(wall), wall, 'wall time', procs.length > 1 ? 'longest of ' + procs.length + ' processes' : 'the program\'s run, start to exit');
    card('cuda_api_ns', fmtNs(api), api, 'in CUDA calls', wall ? fmtPct(100 * api / wall) + ' of wall time' : '');
    card('blocked_ns', fmtNs(blocked), blocked, 'host blocked waiting for the GPU', 'in syncs, synchronous copies, frees', wall && blocked > 0.2 * wall);
    card('busy_pct', fmtPct(busy), busy, 'GPU busy', devs.length > 1 ? 'busiest of ' + devs.length + ' devices' : 'GPU running work, first to last CUDA call', busy < 30);
    card('launches', fmtCount(launches.count || 0), launches.count || 0, 'kernel launches', 'median ' + fmtNs(launches.median_host_ns || 0) + ' of host time each');
    card('bytes', fmtBytes(moved), moved, 'moved by ' + fmtCount(copies) + ' copies and memsets', '');
    const fixes = (report.findings || []).filter((f) => f.estimated_savings_ns > 0).length;
    card('savings_ns', saving ? fmtNs(saving) : 'none', saving, 'estimated saving',
      fixes ? fixes + (fixes > 1 ? ' findings below say how' : ' finding below says how') : 'no finding estimates a saving');
    const notes = $('notes');
    for (const n of report.notes || []) add(notes, el('li', null, n));
    if (report.bad_streams) add(notes, el('li', null, report.bad_streams + ' malformed stream(s) in this capture: their valid records are shown'));
  }

  // ---- call sites and stacks ----------------------------------------------------------------------

  function framesList(frames, innermostFirst) {
    const ul = el('ul', 'frames');
    const list = innermostFirst ? frames.slice().reverse() : frames;
    for (const f of list) {
      const li = add(ul, el('li', f.app ? 'app' : 'lib'));
      add(li, document.createTextNode(f.name));
      if (f.loc) add(li, el('span', 'loc', '  ' + f.loc));
      li.title = f.name + (f.loc ? '  ' + f.loc : '') + (f.module ? '  [' + f.module + ']' : '');
    }
    return ul;
  }

  function siteFrames(site) {
    // report frames are innermost first; show them that way (the call at the top).
    return (site.frames || []).map((f) => ({
      name: f.function || (basename(f.module) + '+0x' + Number(f.offset).toString(16)),
      loc: f.file ? basename(f.file) + (f.line ? ':' + f.line : '') : '',
      module: f.module, app: f.app,
    })).reverse();
  }

  function siteBlock(id) {
    const site = (report.callsites || [])[id];
    const d = el('details', 'site');
    if (!site) { add(d, el('summary', null, 'call site #' + id)); return d; }
    const s = add(d, el('summary'));
    add(s, el('strong', null, site.label));
    add(s, el('span', 'muted', '  ' + fmtCount(site.count) + ' calls, ' + fmtNs(site.ns) + ' \u00b7 ' + (site.apis || []).join(', ')));
    add(d, framesList(siteFrames(site), true));
    return d;
  }

  // ---- findings ----------------------------------------------------------------------------------

  function buildFindings() {
    const box = $('findings');
    const list = report.findings || [];
    if (!list.length) { add(box, el('p', 'muted', 'No findings: nothing in this capture matched a known problem.')); return; }
    list.forEach((f, i) => {
      const d = add(box, el('details', 'finding'));
      d.dataset.rule = f.rule;
      d.dataset.savings = String(f.estimated_savings_ns);
      const s = add(d, el('summary'));
      add(s, el('span', 'sev ' + f.severity, f.severity));
      add(s, el('span', 'saving', f.estimated_savings_ns ? '~' + fmtNs(f.estimated_savings_ns) : 'no estimate'));
      const first = String(f.message).split(/(?<=[.:])\s/)[0];
      add(s, el('span', 'headline', first));
      add(s, el('span', 'rule', f.rule));
      const body = add(d, el('div', 'body'));
      add(body, el('p', null, f.message));
      const ev = Object.entries(f.evidence || {});
      if (ev.length) {
        add(body, el('h4', null, 'Evidence'));
        const t = add(body, el('table', 'kv'));
        for (const [k, v] of ev) {
          const tr = add(t, el('tr'));
          add(tr, el('td', null, k));
          const td = add(tr, el('td', null, fmtEvidence(k, v)));
          td.dataset.raw = String(v);
        }
      }
      if ((f.callsites || []).length) {
        add(body, el('h4', null, 'Call sites (' + f.callsites.length + ')'));
        for (const id of f.callsites) add(body, siteBlock(id));
      }
      if (i === 0) d.open = true;
    });
  }

  // ---- tables --------------------------------------------------------------------------------------

  // cols: [title, value(row) -> raw, format(raw, row) -> text, numeric]
  function sortableTable(name, rows, cols, note) {
    const wrap = el('div', 'table-wrap');
    wrap.dataset.table = name;
    if (!rows.length) { add(wrap, el('div', 'table-note', 'Nothing of this kind in the capture.')); return wrap; }
    const table = add(wrap, el('table', 'data'));
    const head = add(add(table, el('thead')), el('tr'));
    const body = add(table, el('tbody'));
    let sortCol = -1, dir = 1;
    function render() {
      clear(body);
      const order = rows.slice();
      if (sortCol >= 0) {
        const get = cols[sortCol][1];
        order.sort((a, b) => {
          const x = get(a), y = get(b);
          return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * dir;
        });
      }
      for (const r of order) {
        const tr = add(body, el('tr'));
        for (const c of cols) {
          const raw = c[1](r);
          const td = add(tr, el('td', c[3] ? 'num' : null, c[2] ? c[2](raw, r) : raw));
          td.dataset.raw = String(raw);
          td.title = td.textContent;
        }
      }
      Array.from(head.children).forEach((th, i) => {
        th.classList.toggle('sorted-asc', i === sortCol && dir > 0);
        th.classList.toggle('sorted-desc', i === sortCol && dir < 0);
      });
    }
    cols.forEach((c, i) => {
      const th = add(head, el('th', c[3] ? 'num' : null, c[0]));
      th.addEventListener('click', () => {
        if (sortCol === i) dir = -dir; else { sortCol = i; dir = c[3] ? -1 : 1; }
        render();
      });
    });
    render();
    if (note) add(wrap, el('div', 'table-note', note));
    return wrap;
  }

  function siteLabel(ids) {
    const s = (report.callsites || [])[(ids || [])[0]];
    return s ? s.label + ((ids.length > 1) ? ' (+' + (ids.length - 1) + ')' : '') : '';
  }

  function buildTables() {
    const tables = [
      ['Transfers', 'transfers', report.transfers || [], [
        ['Direction', (r) => r.direction], ['Host memory', (r) => r.host_memory], ['Mode', (r) => r.mode],
        ['Count', (r) => r.count, fmtCount, true], ['Bytes', (r) => r.bytes, fmtBytes, true],
        ['Host time', (r) => r.host_ns, fmtNs, true], ['GPU time', (r) => r.gpu_ns, fmtNs, true],
        ['GB/s', (r) => r.gbps, (v, r) => v.toFixed(2) + ' (' + r.gbps_basis + ')', true],
        ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'Host time: time the calling thread spent in the call. GB/s is measured on the GPU when the copies were timed there.'],
      ['Kernels', 'kernels', report.kernels || [], [
        ['Kernel', (r) => r.name], ['Launches', (r) => r.count, fmtCount, true], ['GPU time', (r) => r.gpu_ns, fmtNs, true],
        ['Median GPU', (r) => r.median_gpu_ns, fmtNs, true], ['Launch host time', (r) => r.launch_host_ns, fmtNs, true],
        ['Launch bound', (r) => (r.launch_bound ? 'yes' : ''), null], ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'Launch bound: the kernel runs for less time than the host takes to launch it. GPU time counts the timed launches.'],
      ['Syncs', 'syncs', report.syncs || [], [
        ['API', (r) => r.display], ['Kind', (r) => r.kind], ['Implicit', (r) => (r.implicit ? 'yes' : ''), null],
        ['Count', (r) => r.count, fmtCount, true], ['Blocked', (r) => r.blocked_ns, fmtNs, true],
        ['GPU busy meanwhile', (r) => r.gpu_busy_ns, (v, r) => fmtNs(v) + (r.blocked_ns ? ' (' + fmtPct(100 * v / r.blocked_ns) + ')' : ''), true],
        ['Median', (r) => r.host.median_ns, fmtNs, true], ['Max', (r) => r.host.max_ns, fmtNs, true],
        ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'Implicit: the call waits as a side effect (a synchronous copy, a free). A wait while the GPU was idle is pure overhead.'],
      ['CUDA API', 'apis', report.apis || [], [
        ['API', (r) => r.display], ['Category', (r) => r.category], ['Calls', (r) => r.count, fmtCount, true],
        ['Total', (r) => r.total_ns, fmtNs, true], ['Median', (r) => r.median_ns, fmtNs, true],
        ['Max', (r) => r.max_ns, fmtNs, true], ['Errors', (r) => r.errors, fmtCount, true],
      ], 'Host time inside each hooked driver entry point, named with the runtime call it comes from.'],
    ];
    if ((report.nvtx || []).length)
      tables.push(['NVTX ranges', 'nvtx', report.nvtx, [
        ['Range', (r) => r.name], ['Ranges', (r) => r.ranges, fmtCount, true], ['Time', (r) => r.range_ns, fmtNs, true],
        ['CUDA calls', (r) => r.calls, fmtCount, true], ['In CUDA', (r) => r.cuda_api_ns, fmtNs, true],
        ['Blocked', (r) => r.sync_blocked_ns, fmtNs, true], ['GPU time', (r) => r.gpu_ns, fmtNs, true],
      ], 'Inclusive: a call counts toward every range around it.']);
    const tabs = $('tabs'), box = $('tables');
    const panes = [];
    tables.forEach(([title, key, rows, cols, note], i) => {
      const b = add(tabs, el('button', null, title + ' (' + rows.length + ')'));
      b.dataset.table = key;
      const pane = add(box, sortableTable(key, rows, cols, note));
      panes.push([b, pane]);
      b.addEventListener('click', () => panes.forEach(([bb, pp]) => {
        bb.classList.toggle('active', bb === b);
        pp.hidden = bb !== b;
      }));
      if (i) pane.hidden = true; else b.classList.add('active');
    });
  }

  // ---- flame graph of blocked host time ---------------------------------------------------------

  function buildFlame() {
    const box = $('flame');
    const calls = tl.calls;
    const root = { name: 'all blocked time', value: 0, children: new Map() };
    for (let i = 0; i < calls.begin.length; i++) {
      if (!calls.blocked[i]) continue;
      const w = calls.dur[i];
      if (w <= 0) continue;
      let node = root;
      node.value += w;
      const path = tl.stacks[calls.stack[i]].map((f) => tl.frames[f][0]).concat([S[calls.name[i]]]);
      for (const name of path) {
        let c = node.children.get(name);
        if (!c) { c = { name: name, value: 0, children: new Map() }; node.children.set(name, c); }
        c.value += w;
        node = c;
      }
    }
    box.dataset.total = String(root.value);
    if (!root.value) { add(box, el('div', 'flame-empty', 'The host never waited for the GPU in this capture.')); return; }
    const palette = ['#f8b26a', '#f4a259', '#f7c59f', '#efa48b', '#f6bd60', '#f19c79', '#eec170'];
    function hash(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return Math.abs(h); }
    let focus = root;
    function render() {
      clear(box);
      const width = box.clientWidth || 1000;
      let maxDepth = 0;
      function place(node, depth, x, w, onPath) {
        if (w < 1) return;
        maxDepth = Math.max(maxDepth, depth);
        const d = add(box, el('div', 'flame-node', node.name));
        d.style.left = x + 'px';
        d.style.top = (depth * 20) + 'px';
        d.style.width = Math.max(1, w - 1) + 'px';
        d.style.background = node === root ? '#e0e0dc' : palette[hash(node.name) % palette.length];
        const share = root.value ? 100 * node.value / root.value : 0;
        d.title = node.name + '\n' + fmtNs(node.value) + ' blocked (' + share.toFixed(1) + '% of all blocked time)';
        d.addEventListener('click', () => { focus = node; render(); });
        let cx = x;
        const kids = Array.from(node.children.values()).sort((a, b) => b.value - a.value);
        for (const k of kids) {
          const kw = w * k.value / node.value;
          place(k, depth + 1, cx, kw, onPath);
          cx += kw;
        }
      }
      // The path from the root to the focus is drawn full width, then the focus's subtree.
      const path = [];
      (function find(n, trail) {
        if (n === focus) { path.push.apply(path, trail.concat([n])); return true; }
        for (const k of n.children.values()) if (find(k, trail.concat([n]))) return true;
        return false;
      })(root, []);
      path.slice(0, -1).forEach((n, depth) => {
        const d = add(box, el('div', 'flame-node', n.name));
        d.style.left = '0px'; d.style.top = (depth * 20) + 'px'; d.style.width = (width - 1) + 'px';
        d.style.background = '#e0e0dc';
        d.title = n.name + '\n' + fmtNs(n.value) + ' blocked';
        d.addEventListener('click', () => { focus = n; render(); });
      });
      place(focus, path.length - 1, 0, width, true);
      box.style.height = ((maxDepth + 1) * 20 + 4) + 'px';
    }
    render();
    window.addEventListener('resize', render);
  }

  // ---- timeline ----------------------------------------------------------------------------------

  const CAT_COLORS = ['#9e9e9e', '#4f7cff', '#1aa39a', '#e6a23c', '#e0464e', '#8d7bd1', '#2e9e4f'];
  const GPU_COLORS = ['#2fb344', '#4f7cff', '#7fb2ff', '#167a3a', '#9e9e9e'];
  const BLOCKED_COLOR = '#e0464e';
  const NVTX_COLOR = '#c9b8f0';
  const LABEL_W = 230, AXIS_H = 26, LANE_H = 18, GAP = 6, GROUP_H = 20;

  function buildTimeline() {
    const canvas = $('timeline');
    const tooltip = $('tooltip');
    const details = $('details');
    const calls = tl.calls, gpu = tl.gpu, nvtx = tl.nvtx;
    const nCalls = calls.begin.length;
    const duration = Math.max(1, tl.duration_ns);

    // Items per track, sorted by begin; the longest item bounds the backward search.
    const tracks = tl.tracks.map((t, i) => ({ id: i, t: t, items: [], nvtxItems: [], maxDur: 0, nvtxMax: 0 }));
    function itemsOf(cols, n, pick) {
      for (let i = 0; i < n; i++) pick(tracks[cols.track[i]], i);
    }
    itemsOf(calls, nCalls, (tr, i) => { tr.items.push(i); tr.maxDur = Math.max(tr.maxDur, calls.dur[i]); });
    itemsOf(gpu, gpu.begin.length, (tr, i) => { tr.items.push(i); tr.maxDur = Math.max(tr.maxDur, gpu.dur[i]); });
    itemsOf(nvtx, nvtx.begin.length, (tr, i) => { tr.nvtxItems.push(i); tr.nvtxMax = Math.max(tr.nvtxMax, nvtx.dur[i]); });
    for (const tr of tracks) {
      const cols = tr.t.kind === 'thread' ? calls : gpu;
      tr.cols = cols;
      tr.items = sortedByBegin(Int32Array.from(tr.items), cols);
      tr.nvtxItems = sortedByBegin(Int32Array.from(tr.nvtxItems), nvtx);
      tr.L = laneData(tr.items, cols, tr.maxDur);
      tr.N = laneData(tr.nvtxItems, nvtx, tr.nvtxMax);
    }
    // The collector writes each column in time order already: sort only when it did not.
    function sortedByBegin(items, cols) {
      for (let i = 1; i < items.length; i++)
        if (cols.begin[items[i]] < cols.begin[items[i - 1]]) return items.sort((a, b) => cols.begin[a] - cols.begin[b]);
      return items;
    }
    // A lane's items with their times copied next to each other, in begin order: the drawing loop
    // reads two typed arrays front to back, which keeps a million items within a frame.
    function laneData(items, cols, maxDur) {
      const b = new Float64Array(items.length), d = new Float64Array(items.length);
      for (let i = 0; i < items.length; i++) { b[i] = cols.begin[items[i]]; d[i] = cols.dur[items[i]]; }
      return { items: items, begin: b, dur: d, maxDur: maxDur };
    }
    // GPU work of each call.
    const workOf = new Map();
    for (let i = 0; i < gpu.begin.length; i++) {
      const c = gpu.call[i];
      if (c < 0) continue;
      if (!workOf.has(c)) workOf.set(c, []);
      workOf.get(c).push(i);
    }

    // Rows: per process a header, its threads, then its GPU streams.
    const rows = [];
    let y = AXIS_H;
    tl.processes.forEach((p, pi) => {
      rows.push({ kind: 'group', label: p.label, y: y, h: GROUP_H });
      y += GROUP_H;
      for (const kind of ['thread', 'stream']) {
        for (const tr of tracks) {
          if (tr.t.process !== pi || tr.t.kind !== kind) continue;
          const lanes = kind === 'thread' ? tr.t.nvtx_lanes + 1 : 1;
          tr.y = y; tr.h = lanes * LANE_H; tr.callLane = lanes - 1;
          rows.push({ kind: 'track', track: tr, y: y, h: tr.h + GAP });
          y += tr.h + GAP;
        }
      }
    });
    const totalH = y + 4;

    const view = { begin: 0, end: duration };
    let selected = -1;  // a call row
    let width = 800, dpr = 1;
    const ctx = canvas.getContext('2d');

    function resize() {
      dpr = window.devicePixelRatio || 1;
      width = canvas.parentElement.clientWidth || 800;
      canvas.style.height = totalH + 'px';
      canvas.width = Math.floor(width * dpr);
      canvas.height = Math.floor(totalH * dpr);
      schedule();
    }
    const plotW = () => Math.max(10, width - LABEL_W);
    const xOf = (t) => LABEL_W + (t - view.begin) * plotW() / (view.end - view.begin);
    const tOf = (x) => view.begin + (x - LABEL_W) * (view.end - view.begin) / plotW();

    function lowerBound(L, t) {
      let lo = 0, hi = L.begin.length;
      while (lo < hi) { const m = (lo + hi) >> 1; if (L.begin[m] < t) lo = m + 1; else hi = m; }
      return lo;
    }

    // Draws the items of one lane: exact boxes when wider than a pixel, else per-pixel bins whose
    // opacity is the share of the pixel covered (so a million tiny calls stay one cheap pass).
    const binCover = new Float32Array(8192), binColor = new Array(8192);
    function drawLane(L, y0, h, colorOf, labelOf, filter) {
      const x0 = LABEL_W, W = plotW();
      const scale = W / (view.end - view.begin);
      const items = L.items, begins = L.begin, durs = L.dur, vb = view.begin, ve = view.end;
      let i = lowerBound(L, vb - L.maxDur);
      const n = items.length;
      let binLo = 1 << 30, binHi = -1;
      for (; i < n; i++) {
        const b = begins[i];
        if (b > ve) break;
        const e = b + durs[i];
        if (e < vb) continue;
        const k = items[i];
        if (filter && !filter(k)) continue;
        const xa = x0 + (b - vb) * scale, xb = x0 + (e - vb) * scale;
        if (xb - xa >= 1) {
          const l = Math.max(x0, xa), r = Math.min(x0 + W, xb);
          ctx.fillStyle = colorOf(k);
          ctx.fillRect(l, y0 + 1, Math.max(1, r - l - (r - l > 3 ? 0.5 : 0)), h - 2);
          if (r - l > 40) {
            ctx.save();
            ctx.beginPath(); ctx.rect(l, y0, r - l, h); ctx.clip();
            ctx.fillStyle = '#fff';
            ctx.fillText(labelOf(k), l + 3, y0 + h - 5);
            ctx.restore();
          }
        } else {
          const px = Math.min(8191, Math.max(0, Math.floor(xa - x0)));
          binCover[px] += Math.max(0.05, xb - xa);
          if (!binColor[px]) binColor[px] = colorOf(k);
          if (px < binLo) binLo = px;
          if (px > binHi) binHi = px;
        }
      }
      for (let px = binLo; px <= binHi; px++) {
        const c = binCover[px];
        if (c > 0) {
          ctx.globalAlpha = Math.min(1, 0.35 + c);
          ctx.fillStyle = binColor[px];
          ctx.fillRect(x0 + px, y0 + 1, 1, h - 2);
          binCover[px] = 0; binColor[px] = null;
        }
      }
      ctx.globalAlpha = 1;
    }

    const callColor = (k) => (calls.blocked[k] ? BLOCKED_COLOR : CAT_COLORS[calls.category[k]] || CAT_COLORS[0]);
    const callLabel = (k) => S[calls.name[k]] + (calls.kernel[k] >= 0 ? ' ' + S[calls.kernel[k]] : '');
    const gpuColor = (k) => GPU_COLORS[gpu.kind[k]] || GPU_COLORS[4];
    const gpuLabel = (k) => S[gpu.name[k]];

    function niceStep(span, px) {
      const raw = span / Math.max(1, px / 110);
      const p = Math.pow(10, Math.floor(Math.log10(raw)));
      for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
      return 10 * p;
    }

    // A tick in the unit of its magnitude, with as many decimals as the tick step needs.
    function fmtTick(t, step) {
      const a = Math.max(Math.abs(t), step);
      const [scale, unit] = a < 1e3 ? [1, ' ns'] : a < 1e6 ? [1e3, ' \u00b5s'] : a < 1e9 ? [1e6, ' ms'] : [1e9, ' s'];
      const decimals = Math.min(9, Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9)));
      return (t / scale).toFixed(decimals) + unit;
    }

    let pending = false;
    function schedule() { if (!pending) { pending = true; requestAnimationFrame(draw); } }

    function draw() {
      pending = false;
      const started = performance.now();
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, width, totalH);
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'alphabetic';
      // Axis and grid.
      const step = niceStep(view.end - view.begin, plotW());
      ctx.fillStyle = '#f0f0ec';
      ctx.fillRect(0, 0, width, AXIS_H);
      ctx.strokeStyle = '#ececea';
      ctx.fillStyle = '#555';
      for (let t = Math.ceil(view.begin / step) * step; t <= view.end; t += step) {
        const x = Math.round(xOf(t)) + 0.5;
        ctx.beginPath(); ctx.moveTo(x, AXIS_H - 6); ctx.lineTo(x, totalH); ctx.stroke();
        ctx.fillText(fmtTick(t, step), x + 3, AXIS_H - 9);
      }
      // Rows.
      for (const r of rows) {
        if (r.kind === 'group') {
          ctx.fillStyle = '#e9e9e4';
          ctx.fillRect(0, r.y, width, r.h);
          ctx.fillStyle = '#1d1d1f';
          ctx.font = '600 12px system-ui, sans-serif';
          ctx.fillText(r.label, 8, r.y + 14);
          ctx.font = '11px system-ui, sans-serif';
          continue;
        }
        const tr = r.track;
        ctx.save();
        ctx.beginPath(); ctx.rect(LABEL_W, tr.y, plotW(), tr.h); ctx.clip();
        if (tr.t.kind === 'thread') {
          if (tr.nvtxItems.length)
            for (let lane = 0; lane < tr.callLane; lane++)
              drawLane(tr.N, tr.y + lane * LANE_H, LANE_H, () => NVTX_COLOR, (k) => S[nvtx.name[k]], (k) => nvtx.lane[k] === lane);
          drawLane(tr.L, tr.y + tr.callLane * LANE_H, LANE_H, callColor, callLabel);
        } else {
          drawLane(tr.L, tr.y, LANE_H, gpuColor, gpuLabel);
        }
        ctx.restore();
        // Label column.
        ctx.fillStyle = '#fff';
        ctx.fillRect(0, tr.y - 1, LABEL_W, tr.h + 2);
        ctx.fillStyle = tr.t.kind === 'thread' ? '#1d1d1f' : '#1a6b35';
        const label = (tr.t.kind === 'thread' ? '\u2699 ' : '\u25a3 ') + tr.t.name;
        ctx.save(); ctx.beginPath(); ctx.rect(0, tr.y, LABEL_W - 6, tr.h); ctx.clip();
        ctx.fillText(label, 8, tr.y + tr.h - 5);
        ctx.restore();
        ctx.strokeStyle = '#f0f0ec';
        ctx.beginPath(); ctx.moveTo(0, tr.y + tr.h + GAP / 2 + 0.5); ctx.lineTo(width, tr.y + tr.h + GAP / 2 + 0.5); ctx.stroke();
      }
      ctx.strokeStyle = '#dcdcd8';
      ctx.beginPath(); ctx.moveTo(LABEL_W - 0.5, AXIS_H); ctx.lineTo(LABEL_W - 0.5, totalH); ctx.stroke();
      // The selected call, its GPU work, and arrows between them.
      if (selected >= 0) {
        const tr = tracks[calls.track[selected]];
        const cy = tr.y + tr.callLane * LANE_H;
        const cx0 = xOf(calls.begin[selected]), cx1 = xOf(calls.begin[selected] + calls.dur[selected]);
        ctx.strokeStyle = '#111'; ctx.lineWidth = 2;
        ctx.strokeRect(cx0 - 1, cy, Math.max(2, cx1 - cx0 + 2), LANE_H);
        for (const g of workOf.get(selected) || []) {
          const gt = tracks[gpu.track[g]];
          const gx0 = xOf(gpu.begin[g]), gx1 = xOf(gpu.begin[g] + gpu.dur[g]);
          ctx.strokeRect(gx0 - 1, gt.y, Math.max(2, gx1 - gx0 + 2), LANE_H);
          ctx.beginPath();
          const ax = Math.max(LABEL_W, (cx0 + cx1) / 2), bx = Math.max(LABEL_W, gx0);
          ctx.moveTo(ax, cy + LANE_H); ctx.lineTo(bx, gt.y); ctx.stroke();
          ctx.beginPath(); ctx.moveTo(bx, gt.y); ctx.lineTo(bx - 4, gt.y - 6); ctx.lineTo(bx + 4, gt.y - 6); ctx.closePath();
          ctx.fillStyle = '#111'; ctx.fill();
        }
        ctx.lineWidth = 1;
      }
      $('range').textContent = 'showing ' + fmtTick(view.begin, step) + ' \u2013 ' + fmtTick(view.end, step) + ' (' + fmtNs(view.end - view.begin) + ')';
      state.lastDrawMs = performance.now() - started;
      publish();
    }

    // ---- interaction
    function setRange(b, e) {
      const minSpan = 100;  // ns
      let span = Math.max(minSpan, Math.min(duration * 1.04, e - b));
      let mid = (b + e) / 2;
      b = mid - span / 2; e = mid + span / 2;
      const lo = -duration * 0.02, hi = duration * 1.02;
      if (b < lo) { e += lo - b; b = lo; }
      if (e > hi) { b -= e - hi; e = hi; }
      view.begin = b; view.end = e;
      schedule();
    }
    function zoomAt(t, factor) {
      setRange(t - (t - view.begin) * factor, t + (view.end - t) * factor);
    }
    function zoomBy(factor) { zoomAt((view.begin + view.end) / 2, factor); }
    function panBy(frac) { const d = (view.end - view.begin) * frac; setRange(view.begin + d, view.end + d); }
    function reset() { setRange(0, duration); }

    canvas.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const x = ev.clientX - rect.left;
      if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) { panBy((ev.deltaX || ev.deltaY) / plotW()); return; }
      const factor = Math.pow(1.0015, ev.deltaY);
      zoomAt(x > LABEL_W ? tOf(x) : (view.begin + view.end) / 2, factor);
    }, { passive: false });

    let drag = null;
    canvas.addEventListener('mousedown', (ev) => {
      const rect = canvas.getBoundingClientRect();
      drag = { x: ev.clientX, begin: view.begin, end: view.end, moved: false, startX: ev.clientX - rect.left, startY: ev.clientY - rect.top };
      canvas.focus();
    });
    window.addEventListener('mousemove', (ev) => {
      if (drag) {
        const dx = ev.clientX - drag.x;
        if (Math.abs(dx) > 3) drag.moved = true;
        if (drag.moved) {
          canvas.classList.add('dragging');
          const dt = dx * (drag.end - drag.begin) / plotW();
          setRange(drag.begin - dt, drag.end - dt);
          tooltip.hidden = true;
          return;
        }
      }
      hover(ev);
    });
    window.addEventListener('mouseup', (ev) => {
      if (!drag) return;
      const wasClick = !drag.moved;
      drag = null;
      canvas.classList.remove('dragging');
      if (wasClick && ev.target === canvas) {
        const rect = canvas.getBoundingClientRect();
        const hit = hitTest(ev.clientX - rect.left, ev.clientY - rect.top);
        if (hit && hit.kind === 'call') select(hit.index);
        else if (hit && hit.kind === 'gpu' && gpu.call[hit.index] >= 0) select(gpu.call[hit.index]);
      }
    });
    canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
    document.addEventListener('keydown', (ev) => {
      if (ev.target && /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName)) return;
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      const k = ev.key;
      if (k === '+' || k === '=') zoomBy(0.5);
      else if (k === '-' || k === '_') zoomBy(2);
      else if (k === '0') reset();
      else if (k === 'ArrowLeft' && document.activeElement === canvas) panBy(-0.2);
      else if (k === 'ArrowRight' && document.activeElement === canvas) panBy(0.2);
      else return;
      ev.preventDefault();
    });
    $('zoom-in').addEventListener('click', () => zoomBy(0.5));
    $('zoom-out').addEventListener('click', () => zoomBy(2));
    $('zoom-reset').addEventListener('click', reset);

    // The smallest item under (x, y), within 3 px.
    function hitTest(x, y) {
      if (x < LABEL_W) return null;
      const tr = tracks.find((t) => t.y !== undefined && y >= t.y && y < t.y + t.h);
      if (!tr) return null;
      const lane = Math.floor((y - tr.y) / LANE_H);
      const t = tOf(x), slack = 3 * (view.end - view.begin) / plotW();
      let L, kind, filter = null;
      if (tr.t.kind === 'stream') { L = tr.L; kind = 'gpu'; }
      else if (lane === tr.callLane) { L = tr.L; kind = 'call'; }
      else { L = tr.N; kind = 'nvtx'; filter = (k) => nvtx.lane[k] === lane; }
      let best = -1, bestDur = Infinity;
      for (let i = lowerBound(L, t - slack - L.maxDur); i < L.items.length; i++) {
        const k = L.items[i];
        const b = L.begin[i];
        if (b > t + slack) break;
        if (filter && !filter(k)) continue;
        if (b + L.dur[i] + slack >= t && L.dur[i] < bestDur) { best = k; bestDur = L.dur[i]; }
      }
      return best < 0 ? null : { kind: kind, index: best, track: tr };
    }

    function describe(hit) {
      const k = hit.index;
      if (hit.kind === 'call') {
        const lines = [callLabel(k) + '  (' + S[calls.api[k]] + ')', fmtNs(calls.dur[k]) + ' at ' + fmtNs(calls.begin[k])];
        if (calls.bytes[k]) lines.push(fmtBytes(calls.bytes[k]));
        if (calls.blocked[k]) lines.push('the thread waited for the GPU here');
        if (calls.result[k]) lines.push('returned error ' + calls.result[k]);
        const st = tl.stacks[calls.stack[k]];
        const app = st.map((f) => tl.frames[f]).filter((f) => f[4]);
        if (app.length) lines.push('from ' + frameText(app[app.length - 1]));
        const w = workOf.get(k);
        if (w) lines.push(w.length + ' GPU operation' + (w.length > 1 ? 's' : '') + ' \u2014 click for details');
        return lines.join('\n');
      }
      if (hit.kind === 'gpu') {
        const lines = [gpuLabel(k), tl.gpu_kinds[gpu.kind[k]] + ' on ' + hit.track.t.name, fmtNs(gpu.dur[k]) + ' at ' + fmtNs(gpu.begin[k])];
        const c = gpu.call[k];
        if (c >= 0) lines.push('submitted by ' + S[calls.name[c]] + ' ' + fmtNs(gpu.begin[k] - calls.begin[c]) + ' earlier');
        return lines.join('\n');
      }
      return 'NVTX range ' + S[nvtx.name[k]] + '\n' + fmtNs(nvtx.dur[k]) + ' at ' + fmtNs(nvtx.begin[k]);
    }

    function hover(ev) {
      if (ev.target !== canvas) { tooltip.hidden = true; return; }
      const rect = canvas.getBoundingClientRect();
      const hit = hitTest(ev.clientX - rect.left, ev.clientY - rect.top);
      if (!hit) { tooltip.hidden = true; return; }
      tooltip.textContent = describe(hit);
      tooltip.hidden = false;
      const tw = tooltip.offsetWidth, th = tooltip.offsetHeight;
      let left = ev.clientX + 14, top = ev.clientY + 14;
      if (left + tw > window.innerWidth - 8) left = ev.clientX - tw - 14;
      if (top + th > window.innerHeight - 8) top = ev.clientY - th - 14;
      tooltip.style.left = left + 'px';
      tooltip.style.top = top + 'px';
    }

    function select(k) {
      selected = k;
      clear(details);
      const tr = tracks[calls.track[k]];
      const h = add(details, el('h3', null, callLabel(k)));
      h.dataset.call = String(k);
      const facts = [S[calls.api[k]], fmtNs(calls.dur[k]) + ' on ' + tr.t.name, 'at ' + fmtNs(calls.begin[k]) + ' (call #' + calls.seq[k] + ')'];
      if (calls.bytes[k]) facts.push(fmtBytes(calls.bytes[k]));
      if (calls.result[k]) facts.push('returned error ' + calls.result[k]);
      add(details, el('div', 'muted', facts.join(' \u00b7 ')));
      if (calls.blocked[k]) add(details, el('div', null, 'The thread was blocked in this call until the GPU caught up.'));
      const cols = add(details, el('div', 'cols'));
      const left = add(cols, el('div'));
      add(left, el('h4', null, 'Called from (innermost first; your code in bold)'));
      const st = tl.stacks[calls.stack[k]];
      if (!st.length) add(left, el('p', 'muted', 'No stack was recorded for this call.'));
      else {
        const list = add(left, framesList(st.map((f) => {
          const fr = tl.frames[f];
          return { name: fr[0], loc: fr[1] ? basename(fr[1]) + (fr[2] ? ':' + fr[2] : '') : '', module: fr[3], app: !!fr[4] };
        }), true));
        list.id = 'details-stack';
      }
      const right = add(cols, el('div'));
      add(right, el('h4', null, 'GPU work it caused'));
      const work = workOf.get(k) || [];
      if (!work.length) add(right, el('p', 'muted', calls.category[k] === 2 || calls.category[k] === 6 || calls.category[k] === 1
        ? 'Not timed on the GPU (gpuspy samples the timing of frequent operations).' : 'None: this call submits no GPU work.'));
      for (const g of work) {
        const row = add(right, el('div', 'work'));
        row.dataset.gpu = String(g);
        add(row, el('strong', null, S[gpu.name[g]]));
        add(row, document.createTextNode(' on ' + tracks[gpu.track[g]].t.name + ': ran ' + fmtNs(gpu.dur[g]) + ', started ' +
          fmtNs(gpu.begin[g] - calls.begin[k]) + ' after the call began'));
        const b = add(row, el('button', null, 'show'));
        b.addEventListener('click', () => {
          const lo = Math.min(calls.begin[k], gpu.begin[g]), hi = Math.max(calls.begin[k] + calls.dur[k], gpu.begin[g] + gpu.dur[g]);
          const pad = Math.max(1000, (hi - lo) * 0.3);
          setRange(lo - pad, hi + pad);
        });
      }
      schedule();
    }

    // Read-only state for tests and the curious: a fresh snapshot after every draw.
    function publish() {
      state.visible = Object.freeze({ begin_ns: view.begin, end_ns: view.end });
      state.selectedCall = selected;
      state.draws++;
    }
    const state = {
      ready: false,
      draws: 0,
      tracks: Object.freeze(tracks.map((tr) => Object.freeze({ name: tr.t.name, kind: tr.t.kind, pid: tr.t.pid, tid: tr.t.tid,
        device: tr.t.device, top: tr.y, height: tr.h, items: tr.items.length }))),
      visible: null,
      selectedCall: -1,
      calls: nCalls,
      // Where call k is drawn, in client coordinates, after bringing it into view (for tests).
      pointOfCall: function (k) {
        const b = calls.begin[k], d = Math.max(calls.dur[k], 1);
        view.begin = b - d * 2; view.end = b + d * 3;
        draw();
        const tr = tracks[calls.track[k]];
        const rect = canvas.getBoundingClientRect();
        return { x: rect.left + (xOf(b) + xOf(b + d)) / 2, y: rect.top + tr.y + tr.callLane * LANE_H + LANE_H / 2 };
      },
      zoomBy: zoomBy, panBy: panBy, reset: reset,
    };
    window.gpuspyViewer = state;
    window.addEventListener('resize', resize);
    resize();
    draw();
    state.ready = true;
  }

  function buildLegend() {
    const box = $('legend');
    const items = [['CUDA call (launch)', CAT_COLORS[2]], ['CUDA call (copy / memset)', CAT_COLORS[1]], ['allocation', CAT_COLORS[3]],
      ['thread waiting for the GPU', BLOCKED_COLOR], ['other call', CAT_COLORS[0]], ['NVTX range', NVTX_COLOR],
      ['GPU: kernel', GPU_COLORS[0]], ['GPU: copy', GPU_COLORS[1]], ['GPU: memset', GPU_COLORS[2]]];
    for (const [name, color] of items) {
      const s = add(box, el('span'));
      const i = add(s, el('i'));
      i.style.background = color;
      add(s, document.createTextNode(name));
    }
    add(box, el('span', 'muted', '\u2699 host thread \u00b7 \u25a3 GPU stream'));
  }

  buildHeader();
  buildHeadline();
  buildFindings();
  buildLegend();
  buildTimeline();
  buildTables();
  buildFlame();
})();
