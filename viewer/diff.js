// viewer/diff.js: the page `gpuspy view --diff A B` writes: two captures side by side, from the diff's
// JSON (schema gpuspy.diff/1, collector/compare/diff_render.cpp) embedded in the page. diffTables(doc) turns the
// document into plain tables (tested in node, tests/viewer/diff_test.cjs); the page shows them with
// textContent only: kernel names and call sites come from the profiled program.
'use strict';

function fmtNs(ns) {
  if (ns === null || ns === undefined) return '-';
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
  if (a >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
  if (a >= 1e3) return (ns / 1e3).toFixed(2) + ' us';
  return ns + ' ns';
}

function fmtBytes(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = b, i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; ++i; }
  return (i ? v.toFixed(1) : String(v)) + ' ' + units[i];
}

function fmtPct(p) {
  if (p === null || p === undefined) return 'new';
  return (p > 0 ? '+' : '') + p.toFixed(1) + '%';
}

const HEADLINE = [
  ['wall_ns', 'wall', fmtNs], ['cuda_api_ns', 'CUDA API time', fmtNs], ['calls', 'CUDA calls', String],
  ['launches', 'kernel launches', String], ['graph_launches', 'graph launches', String],
  ['host_functions', 'host functions', String],
  ['transfer_bytes', 'bytes transferred', fmtBytes], ['sync_blocked_ns', 'blocked in syncs', fmtNs],
];

function verdictOf(doc, section, name) {
  for (const s of doc.spread || []) if (s.section === section && s.name === name) return s.verdict;
  return '';
}

// The tables of the page: [{id, title, columns, rows: [[cell, ...]]}], each cell a string.
function diffTables(doc) {
  const tables = [];
  const runs = (doc.runs && (doc.runs.a > 1 || doc.runs.b > 1)) ? doc.runs : null;
  const head = { id: 'headline', title: 'Headline', columns: ['figure', 'A', 'B', 'delta', 'change'], rows: [] };
  if (runs) head.columns.push('over the runs');
  for (const [key, label, fmt] of HEADLINE) {
    const p = doc.headline[key];
    if (!p || ((key === 'graph_launches' || key === 'host_functions') && !p.a && !p.b)) continue;
    const row = [label, fmt(p.a), fmt(p.b), (p.delta > 0 ? '+' : p.delta < 0 ? '-' : '') + fmt(Math.abs(p.delta)),
                 fmtPct(p.change_pct)];
    if (runs) row.push(verdictOf(doc, 'headline', key) || '');
    head.rows.push(row);
  }
  const busy = doc.headline.gpu_busy;
  if (busy) {
    const b = (x) => x.busy_pct.toFixed(1) + '%' + (x.busy_basis === 'measured' ? '' :
      ' (' + (x.busy_basis === 'estimated' ? 'estimate' : 'upper bound') + ', ' + x.busy_pct_min.toFixed(1) + '-' +
      x.busy_pct_max.toFixed(1) + '%)');
    const row = ['GPU busy', b(busy.a), b(busy.b), '', ''];
    if (runs) row.push(verdictOf(doc, 'headline', 'gpu_busy_ns') || '');
    head.rows.push(row);
  }
  tables.push(head);

  const bound = (b) => (b === 'at_most' ? 'at most ' : b === 'at_least' ? 'at least ' : '');
  tables.push({
    id: 'findings', title: 'Findings (estimated savings)', columns: ['status', 'rule', 'A', 'B'],
    rows: (doc.findings || []).map((f) => [f.status, f.rule,
      f.status === 'new' ? '-' : bound(f.savings_bound_a) + fmtNs(f.estimated_savings_ns.a),
      f.status === 'resolved' ? '-' : bound(f.savings_bound_b) + fmtNs(f.estimated_savings_ns.b)]),
  });

  if (runs) {
    const range = (name, x) => {
      const f = name === 'transfer_bytes' ? fmtBytes : name === 'launches' ? String : fmtNs;
      return f(x.median) + ' [' + f(x.min) + ' - ' + f(x.max) + ']';
    };
    tables.push({
      id: 'spread', title: 'Over the runs (A ' + runs.a + ' runs, B ' + runs.b + ' runs): median [min - max]; ' +
        'beyond noise: a rank test or Welch\u2019s t-test over the runs, p < 0.01, and 1% or more',
      columns: ['section', 'figure', 'A', 'B', 'verdict'],
      rows: doc.spread.map((s) => [s.section, s.name, range(s.name, s.a), range(s.name, s.b),
        s.verdict === 'noise' ? 'noise' : s.verdict === 'too_few' ? 'too few runs to tell' : s.verdict + ' (beyond noise)']),
    });
  }

  const side = (present, v, fmt) => (present ? fmt(v) : '-');
  tables.push({
    id: 'transfers', title: 'Transfers by kind', columns: ['kind', 'count A', 'count B', 'bytes A', 'bytes B', 'host A', 'host B', 'change'],
    rows: (doc.transfers || []).map((t) => [t.direction + ' ' + t.host_memory + ' ' + t.mode,
      side(t.in_a, t.count.a, String), side(t.in_b, t.count.b, String), side(t.in_a, t.bytes.a, fmtBytes),
      side(t.in_b, t.bytes.b, fmtBytes), side(t.in_a, t.host_ns.a, fmtNs), side(t.in_b, t.host_ns.b, fmtNs),
      fmtPct(t.host_ns.change_pct)]),
  });
  tables.push({
    id: 'syncs', title: 'Blocked time by sync kind', columns: ['kind', 'calls A', 'calls B', 'blocked A', 'blocked B', 'change'],
    rows: (doc.syncs || []).map((s) => [s.kind, side(s.in_a, s.count.a, String), side(s.in_b, s.count.b, String),
      side(s.in_a, s.blocked_ns.a, fmtNs), side(s.in_b, s.blocked_ns.b, fmtNs), fmtPct(s.blocked_ns.change_pct)]),
  });
  tables.push({
    id: 'kernels', title: 'Kernels', columns: ['kernel', 'launches A', 'launches B', 'GPU A', 'GPU B', 'change'],
    rows: (doc.kernels || []).map((k) => [k.name, side(k.in_a, k.launches.a, String), side(k.in_b, k.launches.b, String),
      (k.gpu_ns_estimated_a ? '~' : '') + side(k.in_a, k.gpu_ns.a, fmtNs),
      (k.gpu_ns_estimated_b ? '~' : '') + side(k.in_b, k.gpu_ns.b, fmtNs), fmtPct(k.gpu_ns.change_pct)]),
  });
  tables.push({
    id: 'callsites', title: 'Call sites', columns: ['category', 'site', 'calls A', 'calls B', 'host A', 'host B', 'change'],
    rows: (doc.callsites || []).map((c) => [c.category, c.label, side(c.in_a, c.count.a, String),
      side(c.in_b, c.count.b, String), side(c.in_a, c.host_ns.a, fmtNs), side(c.in_b, c.host_ns.b, fmtNs),
      fmtPct(c.host_ns.change_pct)]),
  });
  return tables;
}

// Which columns hold figures ("12.3 ms", "+4.0%", "~1.2 ms", "at most 3 ms"; "-" where a side lacks the
// row, "new" for a change from nothing): right-aligned like the report page's number columns, so that digits line up.
function numericColumns(t) {
  return t.columns.map((_, c) => {
    const cells = t.rows.map((r) => r[c]).filter((x) => x !== '' && x !== '-' && x !== 'new');
    return cells.length > 0 && cells.every((x) => /^(at most |at least )?[+\-~\u2264\u2265]?\d/.test(x));
  });
}

// The class of a cell that says how a thing changed: resolved or noise reads as good news, new or beyond
// noise as a warning.
function cellClass(text) {
  return /noise\)?$/.test(text) && !/beyond noise/.test(text) || text === 'resolved' ? 'good'
    : /beyond noise/.test(text) || text === 'new' ? 'warn' : '';
}

// One sentence: faster or slower, and whether the runs' spread explains it.
function verdictText(doc) {
  const w = doc.headline.wall_ns;
  if (!doc.changed) return 'No change: the two captures have the same figures.';
  if (!w.a || !w.b) return 'The captures differ (see below).';
  const pct = Math.abs(w.change_pct).toFixed(1);
  const how = w.b > w.a ? 'slower' : w.b < w.a ? 'faster' : 'as fast';
  const v = verdictOf(doc, 'headline', 'wall_ns');
  return 'B is ' + pct + '% ' + how + ' than A (wall)' +
    (v === 'noise' ? ': noise, the runs cannot tell the two apart.' : v === 'too_few' ? ': too few runs to tell.' :
      v ? ': beyond the runs\u2019 noise.' : '.');
}

function render() {
  const doc = JSON.parse(document.getElementById('gpuspy-diff').textContent);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };
  document.getElementById('subtitle').textContent = 'A: ' + doc.a + '  \u2192  B: ' + doc.b;
  document.getElementById('verdict').textContent = verdictText(doc);
  const root = document.getElementById('tables-section');
  for (const t of diffTables(doc)) {
    if (!t.rows.length) continue;
    const sec = el('div');
    sec.id = 'diff-' + t.id;
    sec.className = 'diff-table';
    sec.appendChild(el('h2', t.title));
    // The report page's table look (viewer.css: table.data, padded cells, figures right-aligned).
    const wrap = el('div', undefined, 'table-wrap');
    const table = el('table', undefined, 'data static');
    const numeric = numericColumns(t);
    const tr = el('tr');
    t.columns.forEach((c, i) => tr.appendChild(el('th', c, numeric[i] ? 'num' : '')));
    table.appendChild(el('thead')).appendChild(tr);
    const body = el('tbody');
    for (const r of t.rows) {
      const row = el('tr');
      r.forEach((c, i) => {
        const td = row.appendChild(el('td', c, ((numeric[i] ? 'num ' : '') + cellClass(c)).trim()));
        td.title = c;  // a cell cut by the column's width (a long kernel name) shows whole on hover
      });
      body.appendChild(row);
    }
    table.appendChild(body);
    wrap.appendChild(table);
    sec.appendChild(wrap);
    root.appendChild(sec);
  }
  const notes = document.getElementById('notes');
  for (const n of doc.notes || []) notes.appendChild(el('li', n));
}

if (typeof module !== 'undefined' && module.exports) module.exports = { diffTables, verdictText, fmtNs, numericColumns, cellClass, render };
else document.addEventListener('DOMContentLoaded', render);
