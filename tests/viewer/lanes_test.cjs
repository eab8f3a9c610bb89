// tests/viewer/lanes_test.cjs: viewer/lanes.js on made-up lanes, in node (no browser): the merged levels
// keep every item and all of its time, never merge a run wider than the level or an item at least that
// long, and drawing a lane of 200,000 items at low zoom paints a number of boxes bounded by the pixels,
// not the items; hit-testing finds a long call among the short ones at any zoom.
// Usage: node lanes_test.cjs
'use strict';
global.window = {};
require(require('path').join(__dirname, '../../viewer/lanes.js'));
const Lanes = window.gpuspyLanes;

let failures = 0;
function check(ok, what, detail) {
  console.log((ok ? '  ok   ' : '  FAIL ') + what + (ok || detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  if (!ok) failures++;
}

// 200,000 calls of 0.5-5 us, 1-8 us apart, and one long call (2 ms) in the middle; deterministic.
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const n = 200000, long = 100000;
const begins = new Float64Array(n), durs = new Float64Array(n), colors = new Uint8Array(n);
for (let i = 0, t = 0; i < n; i++) {
  begins[i] = t;
  durs[i] = i === long ? 2e6 : 500 + rand() * 4500;
  colors[i] = i % 3;
  t += durs[i] + 1000 + rand() * 7000;
}
const lane = Lanes.build(Int32Array.from({ length: n }, (_, i) => i), begins, durs, colors);
check(lane.items.length === n, 'the lane holds every item');
const totalDur = durs.reduce((a, d) => a + d, 0);
const span = begins[n - 1] + durs[n - 1];

// Every level, made while idle in the page, keeps all items and time and respects its width.
const makers = Lanes.pending(lane);
check(makers.length > 3, 'levels to make for a lane this big (' + makers.length + ')');
const levels = makers.map((make) => make());
for (const r of levels) {
  if (r === lane.raw) continue;
  let count = 0, busy = 0, sorted = true, longAlone = false, widest = 0;
  for (let i = 0; i < r.n; i++) {
    count += r.count[i];
    busy += r.busy[i];
    if (i && r.b[i] < r.b[i - 1]) sorted = false;
    if (r.item[i] === long) longAlone = r.count[i] === 1;
    if (r.count[i] > 1) widest = Math.max(widest, r.e[i] - r.b[i]);
  }
  check(count === n && Math.abs(busy - totalDur) < 1e-3 * totalDur && sorted,
        'level ' + r.width + ' ns: ' + r.n + ' runs hold all ' + n + ' items and their time, in order', [count, busy, totalDur]);
  check(r.width > 0 && widest <= r.width, 'level ' + r.width + ' ns: no merged run is wider', widest);
  check(longAlone === (r.width <= 2e6), 'level ' + r.width + ' ns: the 2 ms call stays alone exactly when it is not shorter', longAlone);
}

// Drawing at low zoom: boxes bounded by the plot's pixels.
const ctx = { fills: 0, fillRect() { this.fills++; }, save() {}, restore() {}, beginPath() {}, rect() {}, clip() {}, fillText() {},
  set fillStyle(v) {}, set globalAlpha(v) {} };
const W = 1200;
for (const [what, vb, ve] of [['all of it', 0, span], ['a tenth', span * 0.45, span * 0.55], ['1/1000', span * 0.5, span * 0.501]]) {
  ctx.fills = 0;
  Lanes.draw(ctx, lane, { x0: 0, W: W, y0: 0, h: 18, vb: vb, ve: ve }, ['#000', '#111', '#222'], (k) => String(k));
  check(ctx.fills > 0 && ctx.fills <= 3 * W, 'drawing ' + what + ' paints at most 3 boxes a pixel (' + ctx.fills + ')');
}

// Hit-testing the middle of the long call, zoomed out and zoomed in.
const mid = begins[long] + durs[long] / 2;
for (const nsPerPx of [span / W, 1000]) {
  const h = Lanes.hit(lane, mid, 3 * nsPerPx, nsPerPx);
  check(h && (h.item === long || (h.item < 0 && h.merged > 0)), 'hovering the long call at ' + Math.round(nsPerPx) + ' ns a pixel finds it', h);
}
const exact = Lanes.hit(lane, mid, 3000, 1000);
check(exact && exact.item === long, 'zoomed in, the long call itself', exact);

console.log(failures ? 'FAILED: ' + failures + ' checks' : 'all checks passed');
process.exit(failures ? 1 : 0);
