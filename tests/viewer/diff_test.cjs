// tests/viewer/diff_test.cjs: viewer/diff.js (the page of `gpuspy view --diff A B`) on a made-up diff
// document, in node (no browser): the headline, findings, the runs' spread with its verdicts and the
// row tables come out as plain strings, a kernel named like markup stays text, a diff of single runs has
// no spread table, the verdict sentence says when a change is noise, the figures' columns are
// right-aligned number columns (as on the report page) and a change beyond noise is coloured a warning.
// Usage: node diff_test.cjs
'use strict';
const { diffTables, verdictText, numericColumns, cellClass, render } = require(require('path').join(__dirname, '../../viewer/diff.js'));

let failures = 0;
function check(ok, what, detail) {
  console.log((ok ? '  ok   ' : '  FAIL ') + what + (ok || detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  if (!ok) failures++;
}

const pair = (a, b) => ({ a, b, delta: b - a, change_pct: a ? (100 * (b - a)) / a : null });
const busy = (p) => ({ busy_pct: p, busy_pct_min: p, busy_pct_max: p + 5, busy_basis: 'estimated' });
const hostile = '<img src=x onerror=alert(1)>(float*)';
const doc = {
  schema: 'gpuspy.diff/1', a: 'a.gspy', b: 'b.gspy', changed: true,
  headline: {
    wall_ns: pair(100e6, 120e6), cuda_api_ns: pair(50e6, 40e6), calls: pair(10, 10), launches: pair(2000, 2000),
    graph_launches: pair(0, 0), transfer_bytes: pair(1024, 2048), sync_blocked_ns: pair(5e6, 1e6),
    gpu_busy: { a: busy(20), b: busy(25) },
  },
  findings: [{ rule: 'pageable-memcpy', status: 'resolved', savings_bound_a: 'at_most', savings_bound_b: '',
               estimated_savings_ns: pair(36e6, 0) }],
  transfers: [{ direction: 'HtoD', host_memory: 'pinned', mode: 'sync', in_a: false, in_b: true,
                count: pair(0, 40), bytes: pair(0, 2048), host_ns: pair(0, 13e6) }],
  syncs: [], callsites: [],
  kernels: [{ name: hostile, in_a: true, in_b: true, gpu_ns_estimated_a: true, gpu_ns_estimated_b: false,
              launches: pair(10, 20), gpu_ns: pair(1e6, 2e6) }],
  runs: { a: 3, b: 3 },
  spread: [
    { section: 'headline', name: 'wall_ns', a: { median: 100e6, min: 90e6, max: 130e6, runs: 3 },
      b: { median: 120e6, min: 110e6, max: 140e6, runs: 3 }, verdict: 'noise' },
    { section: 'kernels', name: hostile, a: { median: 1e6, min: 1e6, max: 1e6, runs: 3 },
      b: { median: 2e6, min: 2e6, max: 2e6, runs: 3 }, verdict: 'higher' },
  ],
  notes: ['a note'],
};

const tables = diffTables(doc);
const byId = Object.fromEntries(tables.map((t) => [t.id, t]));
const head = byId.headline;
check(head.columns.includes('over the runs'), 'headline has a runs column when the captures repeat', head.columns);
check(JSON.stringify(head.rows[0]) === JSON.stringify(['wall', '100.00 ms', '120.00 ms', '+20.00 ms', '+20.0%', 'noise']),
      'wall row: A, B, delta, change, verdict', head.rows[0]);
check(!head.rows.some((r) => r[0] === 'graph launches'), 'no graph launches row when neither has any');
check(head.rows.some((r) => r[0] === 'GPU busy' && r[1] === '20.0% (estimate, 20.0-25.0%)'), 'GPU busy says estimate and interval',
      head.rows.find((r) => r[0] === 'GPU busy'));
check(JSON.stringify(byId.findings.rows[0]) === JSON.stringify(['resolved', 'pageable-memcpy', 'at most 36.00 ms', '-']),
      'finding resolved with its bound', byId.findings.rows[0]);
check(byId.spread && byId.spread.rows.length === 2, 'spread table', byId.spread);
check(byId.spread.rows[0][2] === '100.00 ms [90.00 ms - 130.00 ms]' && byId.spread.rows[0][4] === 'noise', 'wall range, noise',
      byId.spread.rows[0]);
check(byId.spread.rows[1][1] === hostile && byId.spread.rows[1][4] === 'higher (beyond noise)', 'kernel beyond noise, name as text',
      byId.spread.rows[1]);
check(JSON.stringify(byId.transfers.rows[0].slice(0, 3)) === JSON.stringify(['HtoD pinned sync', '-', '40']),
      'a transfer kind only in B', byId.transfers.rows[0]);
check(byId.kernels.rows[0][0] === hostile && byId.kernels.rows[0][3] === '~1.00 ms', 'kernel row keeps the name and the ~',
      byId.kernels.rows[0]);
check(verdictText(doc) === 'B is 20.0% slower than A (wall): noise, the runs cannot tell the two apart.', 'verdict sentence',
      verdictText(doc));

// Laid out as the report page's tables: figures right-aligned, names and kinds left; changes coloured.
check(JSON.stringify(numericColumns(head)) === JSON.stringify([false, true, true, true, true, false]),
      'headline: the figures are number columns, the name and verdict are not', numericColumns(head));
check(JSON.stringify(numericColumns(byId.findings)) === JSON.stringify([false, false, true, false]),
      'findings: A (at most ...) is a number column; B holds only "-"', numericColumns(byId.findings));
check(JSON.stringify(numericColumns(byId.kernels)) === JSON.stringify([false, true, true, true, true, true]),
      'kernels: every column but the name is a number column', numericColumns(byId.kernels));
check(cellClass('noise') === 'good' && cellClass('resolved') === 'good' && cellClass('new') === 'warn' &&
      cellClass('higher (beyond noise)') === 'warn' && cellClass('too few runs to tell') === '' && cellClass('wall') === '',
      'a change beyond noise is a warning, noise is not');

// The page itself, rendered into a stand-in DOM: every table is a table.data in a .table-wrap (the
// report page's padded cells), its figure cells carry 'num' (right-aligned).
{
  const made = [];
  const node = (tag) => {
    const n = { tag, children: [], className: '', textContent: '', title: '', id: '',
                appendChild(c) { this.children.push(c); return c; } };
    made.push(n);
    return n;
  };
  const byIdNodes = { 'gpuspy-diff': node('script'), 'tables-section': node('section'), subtitle: node('div'),
                      verdict: node('p'), notes: node('ul') };
  byIdNodes['gpuspy-diff'].textContent = JSON.stringify(doc);
  global.document = { getElementById: (id) => byIdNodes[id], createElement: node };
  render();
  delete global.document;
  const tablesMade = made.filter((n) => n.tag === 'table');
  check(tablesMade.length === tables.filter((t) => t.rows.length).length &&
        tablesMade.every((t) => t.className === 'data static'), 'every table is a table.data', tablesMade.map((t) => t.className));
  const wraps = made.filter((n) => n.className === 'table-wrap');
  check(wraps.length === tablesMade.length && wraps.every((w) => w.children[0].tag === 'table'), 'each in a .table-wrap');
  const wallRow = tablesMade[0].children[1].children[0].children;
  check(wallRow.map((c) => c.className).join('|') === '|num|num|num|num|good' && wallRow[1].textContent === '100.00 ms',
        'the wall row: figures right-aligned, its verdict coloured', wallRow.map((c) => c.className));
}

const single = Object.assign({}, doc, { runs: { a: 1, b: 1 }, spread: [] });
const singleTables = diffTables(single);
check(!singleTables.some((t) => t.id === 'spread'), 'single runs: no spread table');
check(!singleTables[0].columns.includes('over the runs'), 'single runs: no runs column');
check(verdictText(single) === 'B is 20.0% slower than A (wall).', 'single runs: plain verdict', verdictText(single));
check(verdictText(Object.assign({}, doc, { changed: false })).startsWith('No change'), 'no change');

if (failures) {
  console.log(`diff_test: ${failures} check(s) failed`);
  process.exit(1);
}
console.log('diff_test: all checks passed');
