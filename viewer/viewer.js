// viewer/viewer.js: the gpuspy page: headline numbers, findings, the timeline (canvas), sortable tables
// and a flame graph of blocked host time, all from the "gpuspy.view/1" JSON in #gpuspy-data (see
// README.md). Every string from the capture reaches the page through textContent, a canvas fillText or
// an attribute property, never as HTML: a kernel may be named "<img src=x onerror=...>".
(function () {
  'use strict';

  // ---- formatting -----------------------------------------------------------------------------

  // How a finding's saving reads: an estimate ("~"), or a bound where it rests on GPU times that are only
  // upper bounds (the report's estimated_savings_bound; the finding's message says why).
  function boundWord(f) {
    return f.estimated_savings_bound === 'at_most' ? 'at most ' : f.estimated_savings_bound === 'at_least' ? 'at least ' : '~';
  }

  // The findings the headline total counts: of each group that covers the same calls (linked by
  // overlaps), the one with the largest saving, as the report's findings_savings_ns counts them.
  function countedFindings(findings) {
    const byRule = new Map(findings.map((f, i) => [f.rule, i]));
    const seen = new Set();
    const counted = [];
    findings.forEach((f, i) => {
      if (seen.has(i)) return;
      let best = f;
      const todo = [i];
      seen.add(i);
      while (todo.length) {
        const g = findings[todo.pop()];
        if ((g.estimated_savings_ns || 0) > (best.estimated_savings_ns || 0)) best = g;
        for (const r of g.overlaps || []) {
          const k = byRule.get(r);
          if (k !== undefined && !seen.has(k)) { seen.add(k); todo.push(k); }
        }
      }
      counted.push(best);
    });
    return counted;
  }

  // The part of the findings' total that is bounds, not estimates: "" when none is.
  function boundsOfTotal(findings) {
    const part = (b) => findings.filter((f) => f.estimated_savings_bound === b).reduce((a, f) => a + (f.estimated_savings_ns || 0), 0);
    const most = part('at_most'), least = part('at_least');
    const parts = [];
    if (most) parts.push(fmtNs(most) + ' is an upper bound');
    if (least) parts.push(fmtNs(least) + (most ? ' a lower bound' : ' is a lower bound'));
    return parts.length ? '; of that, ' + parts.join(' and ') + ' (see each finding)' : '';
  }

  function fmtNs(ns) {
    ns = Number(ns) || 0;
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(a < 1e4 ? 2 : a < 1e5 ? 1 : 0) + ' us';  // as the text report writes it
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
  // A value that is only a bound reads "\u2264 " (at most) or "\u2265 " (at least) before it, as the text
  // report's "<=" and ">=": a blocking copy's GPU time is an upper bound (collector/README.md).
  const AT_MOST = '\u2264 ', AT_LEAST = '\u2265 ';
  function atMost(text, bound) { return (bound ? AT_MOST : '') + text; }
  const BOUND_NOTE = ' \u2264: an upper bound, as it holds copies or memsets that blocked on an idle stream, where CUDA events ' +
    'cannot see when the device work began.';
  // "gpu_busy_ns" -> "GPU busy time": the report's evidence names in words (the value carries the unit).
  function evidenceName(name) {
    return String(name).replace(/_ns$/, ' time').replace(/_pct$/, ' %').replace(/_/g, ' ')
      .replace(/\bgpu\b/g, 'GPU').replace(/^gbps$/, 'GB/s');
  }
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

  // How long each step of loading took (ms), for window.gpuspyViewer.loadMs and the benchmark.
  const loadMs = {};
  let lastMark = performance.now();
  function timed(step, fn) {
    const r = fn();
    const now = performance.now();
    loadMs[step] = Math.round(now - lastMark);
    lastMark = now;
    return r;
  }
  loadMs.before_script = Math.round(lastMark);  // since navigation: reading the page, mostly the data
  const doc = timed('parse', () => JSON.parse($('gpuspy-data').textContent));
  const report = doc.report;
  const tl = timed('decode', () => decodeTimeline(doc.timeline));
  const S = tl.strings;
  const basename = (p) => String(p || '').split('/').pop();

  function frameText(f) {
    // f = [function, file, line, module, app, inlined]
    return f[0] + (f[1] ? ' (' + basename(f[1]) + (f[2] ? ':' + f[2] : '') + ')' : '');
  }

  // "gpuspy.timeline/2" (README.md) as plain columns, one typed array per field and a value per row:
  // times summed from their differences, bytes spread over the transfer calls, and each shape field
  // copied to every row of its shape. The fields the page needs to draw are copied at once, the others
  // the first time they are read (hovering, clicking).
  function decodeTimeline(t) {
    function running(deltas) {
      const out = new Float64Array(deltas.length);
      let at = 0;
      for (let i = 0; i < deltas.length; i++) out[i] = (at += deltas[i]);
      return out;
    }
    function fromShapes(section, shapes, now, later) {
      const n = section.shape.length, shape = new Int32Array(section.shape);
      const out = { shape: shape, begin: running(section.begin), dur: new Float64Array(section.dur) };
      const expand = (f) => {
        const col = new Int32Array(n), from = new Int32Array(shapes[f]);
        for (let i = 0; i < n; i++) col[i] = from[shape[i]];
        return col;
      };
      for (const f of now) out[f] = expand(f);
      for (const f of later) {
        let col = null;
        Object.defineProperty(out, f, { get: () => col || (col = expand(f)), enumerable: true });
      }
      return out;
    }
    const calls = fromShapes(t.calls, t.call_shapes, ['track', 'category', 'blocked'], ['name', 'api', 'stack', 'kernel', 'result']);
    calls.seq = running(t.calls.seq);
    calls.bytes = new Float64Array(calls.begin.length);
    for (let i = 0, x = 0; i < calls.bytes.length; i++) if (calls.category[i] === 1) calls.bytes[i] = t.calls.bytes[x++];
    // bound: 0 measured, 1 only an upper bound, 2 estimated (placed by inference); absent in older files.
    if (!t.gpu_shapes.bound) t.gpu_shapes.bound = t.gpu_shapes.track.map(() => 0);
    const gpu = fromShapes(t.gpu, t.gpu_shapes, ['track', 'kind', 'name', 'bound'], []);
    gpu.call = new Int32Array(t.gpu.call);
    const nvtx = Object.assign({}, t.nvtx, { begin: running(t.nvtx.begin) });
    return Object.assign({}, t, { calls: calls, gpu: gpu, nvtx: nvtx });
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

  function wallNs() { return (report.processes || []).reduce((a, p) => Math.max(a, p.wall_ns), 0); }
  function sum(list, key) { return (list || []).reduce((a, x) => a + (Number(x[key]) || 0), 0); }

  // A device's busy % as the page shows it: text "~62.0% (55.0\u201370.0%)", the same without the mark
  // (bare, for a sentence), the basis and the sub-line that says why.
  function busyOf(d) {
    const basis = (d && d.busy_basis) || 'measured';
    const pct = d ? d.busy_pct : 0;
    const lo = d && d.busy_pct_min !== undefined ? d.busy_pct_min : pct, hi = d && d.busy_pct_max !== undefined ? d.busy_pct_max : pct;
    const out = { basis: basis, min: lo, max: hi, estimated: (d && d.estimated_ops) || 0, ops: (d && d.ops) || 0,
      bare: fmtPct(pct), text: fmtPct(pct), why: '', range: '', title: '' };
    const bounded = (d && d.upper_bound_ops) || 0;
    const boundText = fmtCount(bounded) + ' GPU times of blocking copies or memsets are upper bounds';
    if (basis === 'estimated') {
      // The interval is worth reading only where it is at least a point wide.
      out.range = hi - lo >= 1 ? ' (' + fmtPct(lo).replace('%', '') + '\u2013' + fmtPct(hi) + ')' : '';
      out.bare += out.range;
      out.text = '~' + out.bare;
      out.why = fmtCount(out.estimated) + ' of ' + fmtCount(out.ops) + ' GPU operations not timed: placed by inference' +
        (bounded ? '; ' + fmtCount(bounded) + ' blocking copy or memset times are upper bounds' : '');
      out.title = 'Estimated: operations the GPU-timing budget left untimed are placed on their streams by what CUDA guarantees ' +
        '(in-order streams, submission times, syncs), their durations from timed operations like them' +
        (out.range ? '; the range takes short and long guesses of those durations' : '') + (bounded ? '. ' + boundText : '') + '.';
    } else if (basis === 'upper_bound') {
      out.text = AT_MOST + out.bare;
      out.why = 'at most: ' + boundText;
    }
    return out;
  }

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
    const busiest = devs.reduce((a, d) => (!a || d.busy_pct > a.busy_pct ? d : a), null);
    const busy = busiest ? busiest.busy_pct : 0;
    // Findings on the same calls (sync-memcpy and pageable-memcpy on one set of copies) count once: the
    // report's findings_savings_ns; a report without it (older) gives the plain sum.
    const saving = report.findings_savings_ns !== undefined ? report.findings_savings_ns : sum(report.findings, 'estimated_savings_ns');
    const overlapping = (report.findings || []).some((f) => (f.overlaps || []).length);
    function card(key, value, raw, label, sub, bad) {
      const c = add(box, el('div', 'card' + (bad ? ' bad' : '')));
      c.dataset.key = key;
      c.dataset.raw = String(raw);
      add(c, el('div', 'value', value));
      add(c, el('div', 'label', label));
      if (sub) add(c, el('div', 'sub', sub));
      return c;
    }
    card('wall_ns', fmtNs(wall), wall, 'wall time', procs.length > 1 ? 'longest of ' + procs.length + ' processes' : 'the program\'s run, start to exit');
    card('cuda_api_ns', fmtNs(api), api, 'in CUDA calls', wall ? fmtPct(100 * api / wall) + ' of wall time' : '');
    card('blocked_ns', fmtNs(blocked), blocked, 'host blocked waiting for the GPU', 'in syncs, synchronous copies, frees', wall && blocked > 0.2 * wall);
    // The busy % says what it rests on (the report's busy_basis): measured; an upper bound where blocking
    // copies' spans are; or an estimate, where operations the GPU-timing budget left untimed were placed
    // on their streams by inference, "~62% (55\u201370%)" with the interval of short and long durations.
    const b = busyOf(busiest);
    const busyCard = card('busy_pct', b.text, busy, 'GPU busy (share of the run the GPU was working)',
      [b.why, devs.length > 1 ? 'busiest of ' + devs.length + ' devices' : b.basis === 'measured' ? 'from the first to the last CUDA call' : '']
        .filter((x) => x).join('; '), (b.basis === 'estimated' ? b.max : busy) < 30);
    if (b.range) {  // the interval in a smaller type after the estimate: "~92.0% (92.0\u201399.6%)"
      const v = busyCard.querySelector('.value');
      v.textContent = b.text.slice(0, b.text.length - b.range.length);
      add(v, el('span', 'range', b.range));
    }
    if (b.title) busyCard.title = b.title;
    busyCard.dataset.basis = b.basis;
    busyCard.dataset.min = String(b.min);
    busyCard.dataset.max = String(b.max);
    busyCard.dataset.estimatedOps = String(b.estimated);
    card('launches', fmtCount(launches.count || 0), launches.count || 0, 'kernel launches', 'each took the host ' + fmtNs(launches.median_host_ns || 0) + ' (median)');
    card('bytes', fmtBytes(moved), moved, 'copied or set', 'by ' + fmtCount(copies) + ' copies and memsets');
    const fixes = (report.findings || []).filter((f) => f.estimated_savings_ns > 0).length;
    card('savings_ns', saving ? fmtNs(saving) : 'none', saving, 'estimated saving',
      fixes ? fixes + (fixes > 1 ? ' findings below say how' : ' finding below says how') +
        (overlapping ? '; findings on the same calls counted once' : '') : 'no finding estimates a saving');
    // One sentence that reads the cards for a newcomer.
    const who = procs.length === 1 ? basename(String(procs[0].command).split(' ')[0]) || 'The program' : 'The longest of ' + procs.length + ' processes';
    let verdict = who + ' ran for ' + fmtNs(wall) + ' and spent ' + fmtNs(api) + ' (' + fmtPct(wall ? 100 * api / wall : 0) +
      ') inside CUDA calls, ' + fmtNs(blocked) + ' of it waiting for the GPU to finish. ';
    verdict += 'The GPU was busy ' + (b.basis === 'estimated' ? 'about ' : b.basis === 'upper_bound' ? 'at most ' : '') + b.bare +
      ' of that time' + (b.basis === 'estimated' ? ' (' + fmtCount(b.estimated) + ' of its ' + fmtCount(b.ops) +
        ' operations were not timed and are placed by inference)' : '') + '. ';
    verdict += saving ? 'The findings below would save about ' + fmtNs(saving) + ' (' + fmtPct(wall ? 100 * saving / wall : 0) + ' of the run' +
      (overlapping ? ', counting once the calls several findings cover' : '') + ')' +
      boundsOfTotal(countedFindings(report.findings || [])) + '.' : 'No finding estimates a saving.';
    $('verdict').textContent = verdict;
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
      const saving = add(s, el('span', 'saving', f.estimated_savings_ns ? 'saves ' + boundWord(f) + fmtNs(f.estimated_savings_ns) : 'no estimate'));
      if (f.estimated_savings_ns && wallNs()) saving.title = fmtPct(100 * f.estimated_savings_ns / wallNs()) + ' of the wall time';
      const first = String(f.message).split(/(?<=\.)\s/)[0];
      add(s, el('span', 'headline', first));
      add(s, el('span', 'rule', f.rule));
      const body = add(d, el('div', 'body'));
      add(body, el('p', null, f.message));
      if ((f.overlaps || []).length)
        add(body, el('p', 'muted', 'Some of the same calls as ' + f.overlaps.join(', ') +
          ': the savings do not add (fixing one changes what the other would save).'));
      const ev = Object.entries(f.evidence || {});
      if (ev.length) {
        add(body, el('h4', null, 'Evidence'));
        const t = add(body, el('table', 'kv'));
        for (const [k, v] of ev) {
          const tr = add(t, el('tr'));
          add(tr, el('td', null, evidenceName(k))).title = k;
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
        ['Host time', (r) => r.host_ns, fmtNs, true],
        ['GPU time', (r) => r.gpu_ns, (v, r) => atMost(fmtNs(v), r.upper_bound_count > 0), true],
        ['GB/s', (r) => r.gbps, (v, r) => (r.upper_bound_count > 0 && r.gbps_basis === 'gpu' ? AT_LEAST : '') + v.toFixed(2) +
          ' (' + r.gbps_basis + ')', true],
        ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'Host time: time the calling thread spent in the call. GB/s is measured on the GPU when the copies were timed there.' +
        ((report.transfers || []).some((r) => r.upper_bound_count > 0) ? BOUND_NOTE + ' Their GB/s is then a lower bound (\u2265).' : '')],
      ['Kernels', 'kernels', report.kernels || [], [
        ['Kernel', (r) => r.name], ['Launches', (r) => r.count, fmtCount, true], ['GPU time', (r) => r.gpu_ns, fmtNs, true],
        ['Median GPU', (r) => r.median_gpu_ns, fmtNs, true], ['Launch host time', (r) => r.launch_host_ns, fmtNs, true],
        ['Launch bound', (r) => (r.launch_bound ? 'yes' : ''), null], ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'Launch bound: the kernel runs for less time than the host takes to launch it. GPU time counts the timed launches.'],
      ['Syncs', 'syncs', report.syncs || [], [
        ['API', (r) => r.display], ['Kind', (r) => r.kind], ['Implicit', (r) => (r.implicit ? 'yes' : ''), null],
        ['Count', (r) => r.count, fmtCount, true], ['Blocked', (r) => r.blocked_ns, fmtNs, true],
        ['GPU busy meanwhile', (r) => r.gpu_busy_ns, (v, r) => atMost(fmtNs(v) + (r.blocked_ns ? ' (' + fmtPct(100 * v / r.blocked_ns) + ')' : ''),
          r.upper_bound_count > 0), true],
        ['Median', (r) => r.host.median_ns, fmtNs, true], ['Max', (r) => r.host.max_ns, fmtNs, true],
        ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'Implicit: the call waits as a side effect (a synchronous copy, a free). A wait while the GPU was idle is pure overhead.' +
        ((report.syncs || []).some((r) => r.upper_bound_count > 0) ? BOUND_NOTE : '')],
      ['GPU streams', 'streams', report.streams || [], [
        ['Stream', (r) => r.name], ['PID', (r) => r.pid, String, true], ['Device', (r) => r.device, String, true],
        ['Operations', (r) => r.ops, fmtCount, true], ['Placed by inference', (r) => r.estimated_ops, fmtCount, true],
        ['Busy', (r) => r.busy_ns, (v, r) => (r.estimated_ops ? '~' : '') + fmtNs(v) +
          (r.estimated_ops && r.busy_ns_max - r.busy_ns_min >= 1000 ? ' (' + fmtNs(r.busy_ns_min) + '\u2013' + fmtNs(r.busy_ns_max) + ')' : ''), true],
        ['Busy %', (r) => r.busy_pct, (v, r) => (r.estimated_ops ? '~' : '') + fmtPct(v), true],
      ], 'Each stream\'s work on the device timeline: measured where timed; operations the GPU-timing budget left untimed are ' +
        'placed by inference (~, with the range of short and long guesses of their durations). Busy %: of the process\'s active span.'],
      ['CUDA API', 'apis', report.apis || [], [
        ['API', (r) => r.display], ['Category', (r) => r.category], ['Calls', (r) => r.count, fmtCount, true],
        ['Total', (r) => r.total_ns, fmtNs, true], ['Median', (r) => r.median_ns, fmtNs, true],
        ['Max', (r) => r.max_ns, fmtNs, true], ['Errors', (r) => r.errors, fmtCount, true],
      ], 'Host time inside each hooked driver entry point, named with the runtime call it comes from.'],
    ];
    const hostFunctions = report.host_functions;
    if (hostFunctions && hostFunctions.count)
      tables.splice(2, 0, ['Host functions', 'host_functions', [hostFunctions], [
        ['Count', (r) => r.count, fmtCount, true], ['Graph nodes', (r) => r.graph_count, fmtCount, true],
        ['Held stream', (r) => r.estimated_stream_ns, (v, r) => (r.timed_count < r.count ? '~' : '') + fmtNs(v), true],
        ['Median', (r) => r.median_stream_ns, fmtNs, true], ['Launch host time', (r) => r.launch_host_ns, fmtNs, true],
        ['Top call site', (r) => siteLabel(r.callsites)],
      ], 'cudaLaunchHostFunc and graph host nodes: host code the stream runs in its order, not kernels. Held stream: ' +
        'how long they held their stream (~: the untimed ones at the timed ones\' mean).']);
    if ((report.nvtx || []).length)
      tables.push(['NVTX ranges', 'nvtx', report.nvtx, [
        ['Range', (r) => r.name], ['Ranges', (r) => r.ranges, fmtCount, true], ['Time', (r) => r.range_ns, fmtNs, true],
        ['CUDA calls', (r) => r.calls, fmtCount, true], ['In CUDA', (r) => r.cuda_api_ns, fmtNs, true],
        ['Blocked', (r) => r.sync_blocked_ns, fmtNs, true],
        ['GPU time', (r) => r.gpu_ns, (v, r) => atMost(fmtNs(v), r.upper_bound_count > 0), true],
      ], 'Inclusive: a call counts toward every range around it.' +
        (report.nvtx.some((r) => r.upper_bound_count > 0) ? BOUND_NOTE : '')]);
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
    // Blocked time per call shape first (timeline/2: thread, API, stack, ...): a million calls come
    // from a few hundred shapes.
    const cs = tl.call_shapes;
    const byShape = new Float64Array(cs.track.length);
    for (let i = 0; i < calls.begin.length; i++) if (calls.blocked[i] && calls.dur[i] > 0) byShape[calls.shape[i]] += calls.dur[i];
    for (let shape = 0; shape < byShape.length; shape++) {
      const w = byShape[shape];
      if (!w) continue;
      // The program's own frames ("main (app.cu:72)"), then the CUDA call: the libraries in between say
      // nothing a user can change. A stack with no frame of the program keeps all its frames.
      const frames = tl.stacks[cs.stack[shape]].map((f) => tl.frames[f]);
      const own = frames.filter((f) => f[4]);
      const path = (own.length ? own : frames).map(frameText).concat([S[cs.name[shape]]]);
      let node = root;
      node.value += w;
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

  // By calls.category (other, transfer, launch, alloc, sync, module, graph): a graph launch looks like a
  // launch; a sync that did not wait, or a module load, like any other call. Red is kept for waiting.
  const CAT_COLORS = ['#9e9e9e', '#4f7cff', '#1aa39a', '#e6a23c', '#9e9e9e', '#9e9e9e', '#1aa39a'];
  const GPU_COLORS = ['#2fb344', '#4f7cff', '#7fb2ff', '#167a3a', '#9e9e9e'];
  // GPU work that was not timed, drawn where the device timeline placed it: the colour of its kind,
  // hatched over a pale ground, so that it never passes for measured work.
  const GPU_ESTIMATED = 2;  // gpu_shapes.bound of such work
  const paleOf = (c) => '#' + [1, 3, 5].map((i) => Math.round(255 - (255 - parseInt(c.substr(i, 2), 16)) * 0.35)
    .toString(16).padStart(2, '0')).join('');
  const hatchCss = (c) => 'repeating-linear-gradient(135deg, ' + c + ' 0 2px, ' + paleOf(c) + ' 2px 5px)';
  function hatchPattern(ctx, c) {
    const tile = document.createElement('canvas');
    tile.width = tile.height = 6;
    const t = tile.getContext('2d');
    t.fillStyle = paleOf(c);
    t.fillRect(0, 0, 6, 6);
    t.strokeStyle = c;
    t.lineWidth = 2;
    t.beginPath();
    for (const o of [-6, 0, 6]) { t.moveTo(o, 6); t.lineTo(o + 6, 0); }
    t.stroke();
    return ctx.createPattern(tile, 'repeat');
  }
  const BLOCKED_COLOR = '#e0464e';
  const NVTX_COLOR = '#c9b8f0';
  const CALL_PALETTE = CAT_COLORS.concat([BLOCKED_COLOR]);  // by category; the last: the thread waited for the GPU
  const NVTX_PALETTE = [NVTX_COLOR];
  const Lanes = window.gpuspyLanes;
  const LABEL_W = 230, AXIS_H = 26, LANE_H = 18, GAP = 6, GROUP_H = 20, MEM_H = 36;
  const CRITICAL_COLOR = '#d62728';  // lanes on the run's critical path

  function buildTimeline() {
    const canvas = $('timeline');
    const tooltip = $('tooltip');
    const details = $('details');
    const calls = tl.calls, gpu = tl.gpu, nvtx = tl.nvtx;
    const nCalls = calls.begin.length;
    const duration = Math.max(1, tl.duration_ns);

    // Per track its lanes (viewer/lanes.js): a thread's calls and one lane per NVTX row; a stream's work.
    const tracks = tl.tracks.map((t, i) => ({ id: i, t: t }));
    const rowsOf = (trackCol, keep) => {  // per track: its rows of a section (that pass keep), as Int32Arrays
      const count = new Int32Array(tracks.length);
      for (let i = 0; i < trackCol.length; i++) if (!keep || keep(i)) count[trackCol[i]]++;
      const out = Array.from(count, (c) => new Int32Array(c));
      count.fill(0);
      for (let i = 0; i < trackCol.length; i++) if (!keep || keep(i)) out[trackCol[i]][count[trackCol[i]]++] = i;
      return out;
    };
    const callColors = new Uint8Array(nCalls);
    for (let k = 0; k < nCalls; k++)
      callColors[k] = calls.blocked[k] ? CALL_PALETTE.length - 1 : calls.category[k] < CAT_COLORS.length ? calls.category[k] : 0;
    // Palette: the kinds measured, then the same kinds estimated (hatched).
    const gpuColors = Uint8Array.from(gpu.kind, (kind, k) => (kind < GPU_COLORS.length ? kind : 4) +
      (gpu.bound[k] === GPU_ESTIMATED ? GPU_COLORS.length : 0));
    let estimatedSpans = 0;
    for (let k = 0; k < gpu.bound.length; k++) if (gpu.bound[k] === GPU_ESTIMATED) estimatedSpans++;
    const nvtxColors = new Uint8Array(nvtx.begin.length);
    const callRows = rowsOf(calls.track), gpuRows = rowsOf(gpu.track);
    const nvtxRows = [];  // per NVTX lane: per track its rows
    for (const tr of tracks) {
      if (tr.t.kind === 'thread') {
        tr.lane = Lanes.build(callRows[tr.id], calls.begin, calls.dur, callColors);
        tr.nvtxLanes = [];
        for (let lane = 0; lane < tr.t.nvtx_lanes; lane++) {
          if (!nvtxRows[lane]) nvtxRows[lane] = rowsOf(nvtx.track, (k) => nvtx.lane[k] === lane);
          tr.nvtxLanes.push(Lanes.build(nvtxRows[lane][tr.id], nvtx.begin, nvtx.dur, nvtxColors));
        }
      } else {
        tr.lane = Lanes.build(gpuRows[tr.id], gpu.begin, gpu.dur, gpuColors);
      }
      tr.count = tr.lane.items.length;
      tr.estimated = 0;
      if (tr.t.kind === 'stream') for (const k of tr.lane.items) if (gpu.bound[k] === GPU_ESTIMATED) tr.estimated++;
    }
    // The run's critical path (the report's replay: what set the end of each process's run): each lane's
    // share of it, and the threads with CUDA work none of whose time is on it.
    for (const tr of tracks) {
      tr.critical = 0;
      tr.offPath = false;
      const cp = (report.critical_path || []).find((c) => c.pid === tr.t.pid);
      if (!cp || !cp.wall_ns) continue;
      for (const part of cp.parts || []) {
        const match = tr.t.kind === 'thread' ? part.kind === 'host' && part.tid === tr.t.tid
          : part.kind !== 'host' && part.device === tr.t.device && part.stream === tr.t.stream &&
            !!part.per_thread === !!tr.t.per_thread && (!part.per_thread || part.tid === tr.t.tid);
        if (match) tr.critical += part.ns / cp.wall_ns;
      }
      if (tr.t.kind === 'thread') tr.offPath = (cp.off_path || []).some((o) => o.tid === tr.t.tid);
    }

    // GPU work of each call, as linked lists in two arrays (a Map of arrays costs seconds for a million).
    const firstWork = new Int32Array(nCalls).fill(-1), nextWork = new Int32Array(gpu.begin.length).fill(-1);
    for (let i = gpu.begin.length - 1; i >= 0; i--) {
      const c = gpu.call[i];
      if (c >= 0 && c < nCalls) { nextWork[i] = firstWork[c]; firstWork[c] = i; }
    }
    function workOf(k) {
      const out = [];
      for (let g = firstWork[k]; g >= 0; g = nextWork[g]) out.push(g);
      return out;
    }

    // GPU memory (the report's memory rows): per process and memory space, the bytes in use over time, on
    // the timeline's clock (the report counts from the process's first CUDA call).
    const memTracks = [];
    tl.processes.forEach((p, pi) => {
      const proc = (report.processes || []).find((x) => x.pid === p.pid);
      const shift = proc ? proc.active_begin_ns - tl.origin_ns : 0;
      for (const m of report.memory || []) {
        if (m.pid !== p.pid || !m.series || !m.series.length) continue;
        const name = m.space === 'pinned_host' ? 'pinned host' : m.space + ' ' + m.device;
        const held = m.held_series || [];
        memTracks.push({ process: pi, m: m, name: name, t: m.series.map((x) => x[0] + shift), bytes: m.series.map((x) => x[1]),
          peakT: m.peak_at_ns + shift,
          // With stream-ordered pools: in use plus what they keep reserved unused (a floor), a dashed line.
          heldT: held.map((x) => x[0] + shift), held: held.map((x) => x[1]),
          top: Math.max(1, m.peak_bytes, m.peak_held_min_bytes || 0) });
      }
    });

    // Rows: per process a header, its threads, then its GPU streams, then its memory.
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
      for (const mt of memTracks) {
        if (mt.process !== pi) continue;
        mt.y = y; mt.h = MEM_H;
        rows.push({ kind: 'memory', mem: mt, y: y, h: MEM_H + GAP });
        y += MEM_H + GAP;
      }
    });
    const totalH = y + 4;

    const view = { begin: 0, end: duration };
    let selected = -1;  // a call row
    let width = 800, dpr = 1;
    const ctx = canvas.getContext('2d');
    const GPU_PALETTE = GPU_COLORS.concat(GPU_COLORS.map((c) => hatchPattern(ctx, c)));

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

    const callLabel = (k) => S[calls.name[k]] + (calls.kernel[k] >= 0 ? ' ' + S[calls.kernel[k]] : '');
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
      const [scale, unit] = a < 1e3 ? [1, ' ns'] : a < 1e6 ? [1e3, ' us'] : a < 1e9 ? [1e6, ' ms'] : [1e9, ' s'];
      const decimals = Math.min(9, Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9)));
      return (t / scale).toFixed(decimals) + unit;
    }

    // The label column: a tag saying what the row is (a CPU thread, or a GPU's stream), then its name;
    // a thread's NVTX rows are marked as such.
    function drawTrackLabel(tr) {
      const thread = tr.t.kind === 'thread';
      const tag = thread ? 'CPU' : 'GPU ' + tr.t.device;
      const name = thread ? tr.t.name : tr.t.name.replace(/^GPU \d+ \u00b7 /, '');
      const yText = tr.y + tr.h - 5;
      ctx.save();
      ctx.beginPath(); ctx.rect(0, tr.y, LABEL_W - 6, tr.h); ctx.clip();
      ctx.font = '600 10px system-ui, sans-serif';
      const tw = ctx.measureText(tag).width + 8;
      ctx.fillStyle = thread ? '#5b6170' : GPU_COLORS[0];
      ctx.fillRect(8, tr.y + tr.h - LANE_H + 3, tw, LANE_H - 6);
      ctx.fillStyle = '#fff';
      ctx.fillText(tag, 12, yText - 1);
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillStyle = '#1d1d1f';
      ctx.fillText(name, 14 + tw, yText);
      ctx.fillStyle = '#8a8a90';
      for (let lane = 0; lane < tr.callLane; lane++) ctx.fillText('NVTX ranges', 14 + tw, tr.y + (lane + 1) * LANE_H - 5);
      // On the critical path: a red bar along the row's edge and its share; off it: said in grey.
      if (tr.critical >= 0.01 || tr.offPath) {
        const tag = tr.critical >= 0.01 ? 'critical ' + Math.round(tr.critical * 100) + '%' : 'off path';
        ctx.font = '600 10px system-ui, sans-serif';
        const w = ctx.measureText(tag).width;
        ctx.fillStyle = tr.critical >= 0.01 ? CRITICAL_COLOR : '#a0a0a6';
        ctx.fillText(tag, LABEL_W - 12 - w, yText);
        if (tr.critical >= 0.01) ctx.fillRect(0, tr.y, 4, tr.h);
      }
      ctx.restore();
    }

    // A memory row: the bytes in use as a step line (held until the next change), the peak marked.
    function drawMemory(mt) {
      const top = mt.top;
      const yOf = (b) => mt.y + mt.h - 2 - (mt.h - 12) * b / top;
      ctx.save();
      ctx.beginPath(); ctx.rect(LABEL_W, mt.y, plotW(), mt.h); ctx.clip();
      ctx.beginPath();
      ctx.moveTo(xOf(mt.t[0]), yOf(0));
      for (let i = 0; i < mt.t.length; i++) {
        const x = xOf(mt.t[i]);
        if (i) ctx.lineTo(x, yOf(mt.bytes[i - 1]));
        ctx.lineTo(x, yOf(mt.bytes[i]));
      }
      ctx.lineTo(xOf(Math.max(view.end, mt.t[mt.t.length - 1])), yOf(mt.bytes[mt.bytes.length - 1]));
      ctx.lineTo(xOf(Math.max(view.end, mt.t[mt.t.length - 1])), yOf(0));
      ctx.closePath();
      ctx.fillStyle = 'rgba(120, 94, 240, 0.25)'; ctx.fill();
      ctx.strokeStyle = '#785ef0'; ctx.stroke();
      if (mt.heldT.length) {
        ctx.beginPath();
        ctx.moveTo(xOf(mt.heldT[0]), yOf(mt.held[0]));
        for (let i = 1; i < mt.heldT.length; i++) {
          ctx.lineTo(xOf(mt.heldT[i]), yOf(mt.held[i - 1]));
          ctx.lineTo(xOf(mt.heldT[i]), yOf(mt.held[i]));
        }
        ctx.lineTo(xOf(Math.max(view.end, mt.heldT[mt.heldT.length - 1])), yOf(mt.held[mt.held.length - 1]));
        ctx.setLineDash([4, 3]); ctx.strokeStyle = '#b07d00'; ctx.stroke(); ctx.setLineDash([]);
      }
      const px = xOf(mt.peakT), py = yOf(mt.m.peak_bytes);
      ctx.fillStyle = '#c0392b';
      ctx.beginPath(); ctx.moveTo(px, py); ctx.lineTo(px - 4, py - 7); ctx.lineTo(px + 4, py - 7); ctx.closePath(); ctx.fill();
      ctx.fillText('peak ' + fmtBytes(mt.m.peak_bytes), px + 6, mt.y + 10);
      ctx.restore();
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, mt.y - 1, LABEL_W, mt.h + 2);
      ctx.save();
      ctx.font = '600 10px system-ui, sans-serif';
      const tag = 'MEM';
      const tw = ctx.measureText(tag).width + 8;
      ctx.fillStyle = '#785ef0';
      ctx.fillRect(8, mt.y + mt.h - LANE_H + 3, tw, LANE_H - 6);
      ctx.fillStyle = '#fff';
      ctx.fillText(tag, 12, mt.y + mt.h - 6);
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillStyle = '#1d1d1f';
      ctx.fillText(mt.name + ' \u00b7 peak ' + fmtBytes(mt.m.peak_bytes), 14 + tw, mt.y + mt.h - 5);
      ctx.restore();
    }
    // The bytes in use at time t of a memory row, and what held the peak.
    function describeMemory(mt, t) {
      let i = -1;
      for (let lo = 0, hi = mt.t.length - 1; lo <= hi;) {
        const mid = (lo + hi) >> 1;
        if (mt.t[mid] <= t) { i = mid; lo = mid + 1; } else hi = mid - 1;
      }
      const siteName = (id) => (id !== null && report.callsites && report.callsites[id]) ? report.callsites[id].label : 'other sites';
      const lines = ['GPU memory, ' + mt.name + ': ' + fmtBytes(i >= 0 ? mt.bytes[i] : 0) + ' in use at ' + fmtNs(Math.max(0, t))];
      if (mt.heldT.length) {
        let j = -1;
        for (let lo = 0, hi = mt.heldT.length - 1; lo <= hi;) {
          const mid = (lo + hi) >> 1;
          if (mt.heldT[mid] <= t) { j = mid; lo = mid + 1; } else hi = mid - 1;
        }
        lines.push('held with what stream-ordered pools keep unused: at least ' + fmtBytes(j >= 0 ? mt.held[j] : 0) + ' (dashed)');
        for (const p of mt.m.pools || [])
          lines.push('  ' + p.pool + ' pool: use peaked at ' + fmtBytes(p.peak_used_bytes) + ', reserved at least ' +
            fmtBytes(p.peak_reserved_min_bytes) + (p.regrows ? ', grew back ' + p.regrows + ' times' : ''));
      }
      lines.push('peak ' + fmtBytes(mt.m.peak_bytes) + ' at ' + fmtNs(mt.peakT) + ', held by:');
      for (const h of (mt.m.at_peak || []).slice(0, 5)) lines.push('  ' + fmtBytes(h.bytes) + ' ' + siteName(h.callsite) + ' (' + h.allocations + ')');
      const leaked = (mt.m.live_at_end || []).filter((l) => l.kind === 'leak');
      for (const l of leaked) lines.push('leak: ' + fmtBytes(l.bytes) + ' never released from ' + siteName(l.callsite));
      return lines.join('\n');
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
        if (r.kind === 'memory') { drawMemory(r.mem); continue; }
        const tr = r.track;
        ctx.save();
        ctx.beginPath(); ctx.rect(LABEL_W, tr.y, plotW(), tr.h); ctx.clip();
        const at = (lane) => ({ x0: LABEL_W, W: plotW(), y0: tr.y + lane * LANE_H, h: LANE_H, vb: view.begin, ve: view.end });
        if (tr.t.kind === 'thread') {
          tr.nvtxLanes.forEach((l, lane) => Lanes.draw(ctx, l, at(lane), NVTX_PALETTE, (k) => S[nvtx.name[k]]));
          Lanes.draw(ctx, tr.lane, at(tr.callLane), CALL_PALETTE, callLabel);
        } else {
          Lanes.draw(ctx, tr.lane, at(0), GPU_PALETTE, gpuLabel);
        }
        ctx.restore();
        // Label column.
        ctx.fillStyle = '#fff';
        ctx.fillRect(0, tr.y - 1, LABEL_W, tr.h + 2);
        drawTrackLabel(tr);
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
        for (const g of workOf(selected)) {
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
      $('range').textContent = 'showing ' + fmtTick(view.begin, step) + ' \u2013 ' + fmtTick(view.end, step) + ' (' + fmtNs(view.end - view.begin) + ') after the first recorded event';
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
        if (hit && hit.kind === 'merged') zoomAt((hit.begin + hit.end) / 2, 1 / 8);
        else if (hit && hit.kind === 'call') select(hit.index);
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
      const mt = memTracks.find((m) => y >= m.y && y < m.y + m.h);
      if (mt) return { kind: 'memory', mem: mt, t: tOf(x) };
      const tr = tracks.find((t) => t.y !== undefined && y >= t.y && y < t.y + t.h);
      if (!tr) return null;
      const lane = Math.floor((y - tr.y) / LANE_H);
      const nsPerPx = (view.end - view.begin) / plotW();
      let l, kind;
      if (tr.t.kind === 'stream') { l = tr.lane; kind = 'gpu'; }
      else if (lane === tr.callLane) { l = tr.lane; kind = 'call'; }
      else { l = tr.nvtxLanes[lane]; kind = 'nvtx'; }
      const h = l && Lanes.hit(l, tOf(x), 3 * nsPerPx, nsPerPx);
      if (!h) return null;
      if (h.item < 0) return { kind: 'merged', of: kind, track: tr, count: h.merged, begin: h.begin, end: h.end, busy: h.busy };
      return { kind: kind, index: h.item, track: tr };
    }

    function describe(hit) {
      if (hit.kind === 'memory') return describeMemory(hit.mem, hit.t);
      const k = hit.index;
      if (hit.kind === 'merged') {
        const what = hit.of === 'call' ? 'CUDA calls' : hit.of === 'gpu' ? 'GPU operations' : 'NVTX ranges';
        return fmtCount(hit.count) + ' ' + what + ' too close together to draw one by one\n' + fmtNs(hit.end - hit.begin) + ' from ' +
          fmtNs(hit.begin) + ', ' + fmtPct(100 * hit.busy / Math.max(1, hit.end - hit.begin)) + ' of it busy\nclick or scroll to zoom in';
      }
      if (hit.kind === 'call') {
        const lines = [callLabel(k) + '  (' + S[calls.api[k]] + ')', fmtNs(calls.dur[k]) + ' at ' + fmtNs(calls.begin[k])];
        if (calls.bytes[k]) lines.push(fmtBytes(calls.bytes[k]));
        if (calls.blocked[k]) lines.push('the thread waited for the GPU here');
        if (calls.result[k]) lines.push('returned error ' + calls.result[k]);
        const st = tl.stacks[calls.stack[k]];
        const app = st.map((f) => tl.frames[f]).filter((f) => f[4]);
        if (app.length) lines.push('from ' + frameText(app[app.length - 1]));
        const w = workOf(k);
        if (w.length) lines.push(w.length + ' GPU operation' + (w.length > 1 ? 's' : '') + ' \u2014 click for details');
        return lines.join('\n');
      }
      if (hit.kind === 'gpu') {
        const est = gpu.bound[k] === GPU_ESTIMATED;
        const lines = [gpuLabel(k), tl.gpu_kinds[gpu.kind[k]] + ' on ' + hit.track.t.name,
          (est ? '~' : '') + atMost(fmtNs(gpu.dur[k]), gpu.bound[k] === 1) + ' at ' + (est ? '~' : '') + fmtNs(gpu.begin[k])];
        if (est) lines.push('estimated (placed by inference): not timed under the GPU-timing budget; placed on its stream after the work ' +
          'before it, its duration from timed operations like it');
        if (gpu.bound[k] === 1) lines.push('an upper bound: the call blocked on an idle stream, and CUDA events cannot see when the work began');
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
      const work = workOf(k);
      if (!work.length) add(right, el('p', 'muted', calls.category[k] === 2 || calls.category[k] === 6 || calls.category[k] === 1
        ? 'Not timed on the GPU (gpuspy samples the timing of frequent operations).' : 'None: this call submits no GPU work.'));
      for (const g of work) {
        const row = add(right, el('div', 'work'));
        row.dataset.gpu = String(g);
        const bound = gpu.bound[g] === 1, est = gpu.bound[g] === GPU_ESTIMATED;
        if (est) row.dataset.estimated = '1';
        add(row, el('strong', null, S[gpu.name[g]]));
        add(row, document.createTextNode(' on ' + tracks[gpu.track[g]].t.name + ': ran ' + (bound ? 'at most ' : est ? 'about ' : '') +
          fmtNs(gpu.dur[g]) + ', started ' + (bound ? 'at the earliest ' : est ? 'about ' : '') + fmtNs(gpu.begin[g] - calls.begin[k]) +
          ' after the call began' + (bound ? ' (an upper bound: the call blocked on an idle stream)'
            : est ? ' (estimated, placed by inference: the operation was not timed)' : '')));
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
        device: tr.t.device, top: tr.y, height: tr.h, items: tr.count, estimated: tr.estimated || 0,
        critical: tr.critical, off_path: tr.offPath }))),
      estimatedSpans: estimatedSpans,
      // The memory rows: pid, space, device, points drawn, peak, top and height in CSS pixels.
      memoryTracks: Object.freeze(memTracks.map((mt) => Object.freeze({ pid: mt.m.pid, space: mt.m.space, device: mt.m.device,
        points: mt.t.length, peak_bytes: mt.m.peak_bytes, held_points: mt.heldT.length, top: mt.y, height: mt.h }))),
      // Where a memory row's peak is drawn, in client coordinates (for tests), and what its hover says there.
      pointOfMemoryPeak: function (i) {
        const mt = memTracks[i];
        view.begin = 0; view.end = duration;
        draw();
        let rect = canvas.getBoundingClientRect();
        window.scrollTo(0, Math.max(0, window.scrollY + rect.top + mt.y - window.innerHeight / 2));
        rect = canvas.getBoundingClientRect();
        return { x: rect.left + xOf(mt.peakT) + 1, y: rect.top + mt.y + mt.h / 2 };
      },
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
      // Where GPU span g is drawn, likewise.
      pointOfGpu: function (g) {
        const b = gpu.begin[g], d = Math.max(gpu.dur[g], 1);
        view.begin = b - d * 2; view.end = b + d * 3;
        draw();
        const tr = tracks[gpu.track[g]];
        const rect = canvas.getBoundingClientRect();
        return { x: rect.left + (xOf(b) + xOf(b + d)) / 2, y: rect.top + tr.y + LANE_H / 2 };
      },
      zoomBy: zoomBy, panBy: panBy, reset: reset,
    };
    window.gpuspyViewer = state;
    window.addEventListener('resize', resize);
    resize();
    draw();
    state.ready = true;
    // The zoom levels of big lanes, made one at a time between the user's events.
    const todo = [];
    for (const tr of tracks) for (const l of [tr.lane].concat(tr.nvtxLanes || [])) todo.push(...Lanes.pending(l));
    (function next() { if (todo.length) { todo.shift()(); setTimeout(next, 0); } })();
  }

  function buildLegend() {
    const box = $('legend');
    const line = (title, items) => {
      const row = add(box, el('div', 'legend-row'));
      add(row, el('strong', null, title));
      for (const [name, color] of items) {
        const s = add(row, el('span'));
        add(s, el('i')).style.background = color;
        add(s, document.createTextNode(name));
      }
    };
    line('CPU thread rows: the CUDA calls each thread made', [['kernel launch', CAT_COLORS[2]], ['copy or memset', CAT_COLORS[1]],
      ['allocation or free', CAT_COLORS[3]], ['the thread waited for the GPU', BLOCKED_COLOR], ['other call', CAT_COLORS[0]],
      ['NVTX range (your annotations)', NVTX_COLOR]]);
    line('GPU rows: what ran on each stream, on the same clock', [['kernel', GPU_COLORS[0]], ['copy', GPU_COLORS[1]], ['memset', GPU_COLORS[2]],
      ['estimated (placed by inference: not timed)', hatchCss(GPU_COLORS[0])]]);
    add(box, el('div', 'muted', 'Faint colour: many operations too short to draw one by one; zoom in to separate them. ' +
      'Click a call to draw arrows to the GPU work it caused.'));
  }

  buildHeader();
  buildHeadline();
  buildFindings();
  buildLegend();
  timed('summary', () => 0);
  timed('timeline', buildTimeline);
  timed('tables', buildTables);
  timed('flame', buildFlame);
  window.gpuspyViewer.loadMs = Object.freeze(loadMs);
})();
