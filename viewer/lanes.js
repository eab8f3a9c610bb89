// viewer/lanes.js: one row ("lane") of the timeline, drawn and hit-tested in time that grows with the
// pixels on screen rather than with the items in the capture. At a zoom where a pixel covers S ns, a
// lane of many items is drawn from a level of width W (the largest power of 4 times 256 ns not above S)
// in which items shorter than W that lie closer than W are merged into runs no longer than W (count,
// busy time, main colour); an item at least W long stays alone. A million tiny calls become a few
// thousand runs, a long call among them is still drawn as itself, and a merged run never covers more
// than a pixel, so the pixel columns still show where work is dense and where it is sparse. Each level
// is made from the items in one pass, while the page is idle after loading or when a zoom first needs
// it, and then kept.
(function () {
  'use strict';

  const FIRST_WIDTH_NS = 256;   // the finest level
  const WIDTH_FACTOR = 4;       // each level is this much coarser than the one before
  const MIN_ITEMS = 2048;       // fewer items are drawn one by one at every zoom
  const USEFUL_RATIO = 0.7;     // a level with more than this share of the items is not worth keeping

  // Runs: parallel typed arrays, in begin order. count 1 = an item (`item` is its row); more = merged.
  // endMax[i] is the latest end among runs 0..i: the first run reaching a time is then a binary search,
  // even when one long run spans many short ones.
  function makeRuns(n) {
    return { n: 0, width: 0, b: new Float64Array(n), e: new Float64Array(n), busy: new Float64Array(n),
      count: new Float64Array(n), item: new Int32Array(n), color: new Uint8Array(n), colorNs: new Float64Array(n),
      endMax: new Float64Array(0) };
  }
  function withEndMax(r) {
    const e = r.e, endMax = r.endMax = new Float64Array(r.n);
    let m = -Infinity;
    for (let i = 0; i < r.n; i++) { if (e[i] > m) m = e[i]; endMax[i] = m; }
    return r;
  }
  let scratch = makeRuns(0);  // levels are merged here, then copied to arrays of their size

  // The level of `width` made from the lane's items.
  function merged(items, width) {
    if (scratch.b.length < items.n) scratch = makeRuns(items.n);
    const { b, e, busy, count, item, color, colorNs } = scratch;
    const pb = items.b, pe = items.e, pbusy = items.busy, pitem = items.item, pcolor = items.color;
    let cur = -1, curAlone = false;
    for (let i = 0, n = items.n; i < n; i++) {
      const alone = pe[i] - pb[i] >= width;
      if (cur >= 0 && !alone && !curAlone && pb[i] - e[cur] < width && Math.max(pe[i], e[cur]) - b[cur] <= width) {
        if (pe[i] > e[cur]) e[cur] = pe[i];
        busy[cur] += pbusy[i];
        count[cur] += 1;
        item[cur] = -1;
        if (pcolor[i] === color[cur]) colorNs[cur] += pbusy[i];
        else if (pbusy[i] > colorNs[cur]) { color[cur] = pcolor[i]; colorNs[cur] = pbusy[i]; }
        continue;
      }
      cur++;
      curAlone = alone;
      b[cur] = pb[i]; e[cur] = pe[i]; busy[cur] = pbusy[i]; count[cur] = 1;
      item[cur] = pitem[i]; color[cur] = pcolor[i]; colorNs[cur] = pbusy[i];
    }
    const n = cur + 1;
    const copy = (a) => a.slice(0, n);
    return withEndMax({ n: n, width: width, b: copy(b), e: copy(e), busy: copy(busy), count: copy(count), item: copy(item),
      color: copy(color), colorNs: copy(colorNs), endMax: null });
  }

  // items: an Int32Array of rows (any order) of columns begins, durs (ns) and colors (an index into the
  // palette given to draw). Returns the lane.
  function build(items, begins, durs, colors) {
    const n = items.length;
    let sorted = true;
    for (let i = 1; i < n && sorted; i++) sorted = begins[items[i]] >= begins[items[i - 1]];
    const order = sorted ? items : items.slice().sort((x, y) => begins[x] - begins[y]);
    const raw = makeRuns(n);
    raw.n = n;
    raw.item = order;
    raw.count.fill(1);
    const { b, e, busy, color, colorNs } = raw;
    for (let i = 0; i < n; i++) {
      const k = order[i], d = Math.max(0, durs[k]);
      b[i] = begins[k]; e[i] = b[i] + d; busy[i] = d; colorNs[i] = d; color[i] = colors[k];
    }
    return { items: order, raw: withEndMax(raw), levels: new Map() };
  }

  // The runs to draw at `nsPerPx`: the items, or the level whose merging is invisible at that zoom.
  function levelFor(lane, nsPerPx) {
    if (lane.raw.n < MIN_ITEMS || nsPerPx < FIRST_WIDTH_NS) return lane.raw;
    let width = FIRST_WIDTH_NS;
    while (width * WIDTH_FACTOR <= nsPerPx) width *= WIDTH_FACTOR;
    return level(lane, width);
  }
  function level(lane, width) {
    let runs = lane.levels.get(width);
    if (!runs) {
      runs = merged(lane.raw, width);
      if (runs.n > USEFUL_RATIO * lane.raw.n) runs = lane.raw;
      lane.levels.set(width, runs);
    }
    return runs;
  }

  // The levels a lane may need that are not made yet, as functions that make one each: the page calls
  // them while idle, so that the first zoom to a new level does not pause.
  function pending(lane) {
    const out = [];
    if (lane.raw.n < MIN_ITEMS) return out;
    const span = lane.raw.endMax[lane.raw.n - 1] - lane.raw.b[0];
    for (let w = FIRST_WIDTH_NS; w <= span; w *= WIDTH_FACTOR) if (!lane.levels.has(w)) out.push(() => level(lane, w));
    return out;
  }

  function firstEndingAfter(r, t) {
    let lo = 0, hi = r.n;
    while (lo < hi) { const m = (lo + hi) >> 1; if (r.endMax[m] < t) lo = m + 1; else hi = m; }
    return lo;
  }

  // Draws the lane between times vb and ve into [x0, x0 + W) x [y0, y0 + h). Runs at least a pixel wide
  // are boxes, an item's with its label when there is room; narrower ones add to their pixel column,
  // shaded by the share of the pixel they keep busy, in the colour of the busiest of them.
  const binCover = new Float32Array(8192), binColor = new Int16Array(8192).fill(-1), binBest = new Float64Array(8192);
  function draw(ctx, lane, view, palette, labelOf) {
    const { x0, W, y0, h, vb, ve } = view;
    const scale = W / (ve - vb);
    const r = levelFor(lane, 1 / scale);
    let binLo = 1 << 30, binHi = -1;
    let drawn = 0;
    for (let i = firstEndingAfter(r, vb); i < r.n; i++) {
      const b = r.b[i];
      if (b > ve) break;
      const e = r.e[i];
      if (e < vb) continue;
      drawn++;
      const xa = x0 + (b - vb) * scale, xb = x0 + (e - vb) * scale;
      if (xb - xa >= 1) {
        const l = Math.max(x0, xa), rr = Math.min(x0 + W, xb);
        const alone = r.count[i] === 1;
        ctx.globalAlpha = alone ? 1 : 0.35 + 0.65 * Math.min(1, r.busy[i] / Math.max(1, e - b));
        ctx.fillStyle = palette[r.color[i]] || palette[0];
        ctx.fillRect(l, y0 + 1, Math.max(1, rr - l - (rr - l > 3 ? 0.5 : 0)), h - 2);
        ctx.globalAlpha = 1;
        if (alone && rr - l > 40) {
          ctx.save();
          ctx.beginPath(); ctx.rect(l, y0, rr - l, h); ctx.clip();
          ctx.fillStyle = '#fff';
          ctx.fillText(labelOf(r.item[i]), l + 3, y0 + h - 5);
          ctx.restore();
        }
      } else {
        const px = Math.min(8191, Math.max(0, Math.floor(xa - x0)));
        binCover[px] += Math.max(0.05, r.busy[i] * scale);
        if (r.busy[i] > binBest[px] || binColor[px] < 0) { binColor[px] = r.color[i]; binBest[px] = r.busy[i]; }
        if (px < binLo) binLo = px;
        if (px > binHi) binHi = px;
      }
    }
    for (let px = binLo; px <= binHi; px++) {
      const c = binCover[px];
      if (c > 0) {
        ctx.globalAlpha = Math.min(1, 0.35 + c);
        ctx.fillStyle = palette[binColor[px]] || palette[0];
        ctx.fillRect(x0 + px, y0 + 1, 1, h - 2);
        binCover[px] = 0;
      }
      binColor[px] = -1;
      binBest[px] = 0;
    }
    ctx.globalAlpha = 1;
    return drawn;
  }

  // The shortest run drawn within `slack` ns of time t at `nsPerPx`: {item} for an item, else
  // {merged: count, begin, end, busy}. Null when there is none.
  function hit(lane, t, slack, nsPerPx) {
    const r = levelFor(lane, nsPerPx);
    let best = -1, bestLen = Infinity;
    for (let i = firstEndingAfter(r, t - slack); i < r.n; i++) {
      if (r.b[i] > t + slack) break;
      const len = r.e[i] - r.b[i];
      if (r.e[i] + slack >= t && len < bestLen) { best = i; bestLen = len; }
    }
    if (best < 0) return null;
    if (r.count[best] === 1) return { item: r.item[best] };
    return { item: -1, merged: r.count[best], begin: r.b[best], end: r.e[best], busy: r.busy[best] };
  }

  window.gpuspyLanes = Object.freeze({ build: build, draw: draw, hit: hit, pending: pending });
})();
