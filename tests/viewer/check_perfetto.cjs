// tests/viewer/check_perfetto.cjs: asserts the structure of `gpuspy export --format perfetto` of a real
// capture against `gpuspy report --format json` of it: slices nest per track; every flow goes from a CUDA
// call on a thread track to the GPU work of that same call (same seq) on a stream track; times are
// microseconds on the host clock (the first call begins at the report's active_begin_ns, to the ns);
// every process and track is named, with a track per host thread and per GPU stream; the counters of GPU
// operations running (back to 0 at the end) and bytes moved (adding up to the report's transfers); untimed
// operations drawn where the device timeline placed them, flagged estimated.
// Usage: node check_perfetto.cjs TRACE.json REPORT.json
'use strict';
const fs = require('fs');

const [tracePath, reportPath] = process.argv.slice(2);
const trace = JSON.parse(fs.readFileSync(tracePath, 'utf8'));
const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
let failures = 0;
function check(ok, what) {
  if (!ok) { failures++; console.error('FAIL: ' + what); }
}

check(Array.isArray(trace.traceEvents), 'traceEvents is an array');
const events = trace.traceEvents;
const key = (e) => e.pid + '/' + e.tid;
const ns = (us) => Math.round(us * 1000);

// Timestamps: numbers of microseconds with at most three decimals (whole nanoseconds).
for (const e of events) {
  if (e.ph === 'M') continue;
  // Read from the number's shortest decimal form: ts * 1000 is not exact in doubles at 1e10 us.
  if (typeof e.ts !== 'number' || !(e.ts >= 0) || !/^\d+(\.\d{1,3})?$/.test(String(e.ts))) {
    check(false, 'ts of a ' + e.ph + ' event is whole ns in us: ' + JSON.stringify(e));
    break;
  }
}

// Tracks and names.
const names = new Map(), procNames = new Map();
for (const e of events) {
  if (e.ph === 'M' && e.name === 'thread_name') names.set(key(e), e.args.name);
  if (e.ph === 'M' && e.name === 'process_name') procNames.set(e.pid, e.args.name);
}
const slices = new Map();
for (const e of events) {
  if (e.ph !== 'X') continue;
  check(typeof e.dur === 'number' && e.dur >= 0, 'X event has a duration');
  if (!slices.has(key(e))) slices.set(key(e), []);
  slices.get(key(e)).push({ b: ns(e.ts), e: ns(e.ts) + ns(e.dur), ev: e });
}
for (const k of slices.keys()) check(names.has(k), 'track ' + k + ' has a thread_name');
for (const p of report.processes) check(procNames.has(p.pid), 'process ' + p.pid + ' has a process_name');

const streamTracks = [...slices.keys()].filter((k) => /GPU \d+/.test(names.get(k) || ''));
const threadTracks = [...slices.keys()].filter((k) => !/GPU \d+/.test(names.get(k) || ''));
const threads = report.processes.reduce((a, p) => a + p.threads, 0);
check(threadTracks.length === threads, 'a track per host thread: ' + threadTracks.length + ' tracks, ' + threads + ' threads');
check(streamTracks.length >= 1, 'at least one GPU stream track (' + streamTracks.length + ')');

// Nesting per track, and where each slice lies, for the flows.
let nestedBad = 0;
for (const [k, list] of slices) {
  list.sort((x, y) => x.b - y.b || y.e - x.e);
  const open = [];
  for (const s of list) {
    while (open.length && open[open.length - 1] <= s.b) open.pop();
    if (open.length && s.e > open[open.length - 1]) nestedBad++;
    open.push(s.e);
  }
}
check(nestedBad === 0, 'slices nest properly on every track (' + nestedBad + ' do not)');

// Host clock: calls inside [active_begin, active_end] of their process, the first beginning exactly at
// active_begin (and the last ending at active_end unless slices were cut to nest); GPU work inside the
// process's active span extended by its wall time (work may finish after the last call).
const clamped = (trace.otherData || {}).clamped_slices || 0;
for (const p of report.processes) {
  const calls = [...slices].filter(([k]) => k.startsWith(p.pid + '/') && !/GPU \d+/.test(names.get(k) || ''))
    .flatMap(([, list]) => list.filter((s) => s.ev.cat !== 'nvtx'));
  if (calls.length) {
    const first = Math.min(...calls.map((s) => s.b)), last = Math.max(...calls.map((s) => s.e));
    check(first === p.active_begin_ns, 'process ' + p.pid + ': first call at active_begin_ns (' + first + ' vs ' + p.active_begin_ns + ')');
    if (!clamped) check(last === p.active_end_ns, 'process ' + p.pid + ': last call ends at active_end_ns (' + last + ' vs ' + p.active_end_ns + ')');
  }
  const lo = p.active_begin_ns, hi = p.active_end_ns;
  for (const [k, list] of slices) {
    if (!k.startsWith(p.pid + '/')) continue;
    const gpu = /GPU \d+/.test(names.get(k) || '');
    for (const s of list) {
      if (s.ev.cat === 'nvtx') continue;
      const ok = gpu ? s.b >= lo && s.e <= hi + p.wall_ns : s.b >= lo && s.e <= hi;
      if (!ok) { check(false, 'slice on the host clock inside the process span: ' + JSON.stringify(s.ev)); break; }
    }
  }
}

// Flows: every start has exactly one finish with the same id, on a different track; both bind inside a slice.
const starts = new Map(), finishes = new Map();
for (const e of events) {
  if (e.ph === 's') { check(!starts.has(e.id), 'flow id ' + e.id + ' starts once'); starts.set(e.id, e); }
  if (e.ph === 'f') { check(!finishes.has(e.id), 'flow id ' + e.id + ' finishes once'); finishes.set(e.id, e); }
}
check(starts.size > 0, 'there are flow arrows (' + starts.size + ')');
// The slice a flow event binds to: the innermost slice of its track around its time (slices are sorted
// outermost first above, so the last that contains it).
const boundTo = (e) => (slices.get(key(e)) || []).filter((s) => s.b <= ns(e.ts) && ns(e.ts) <= s.e && s.ev.cat !== 'nvtx').pop();
let flowBad = 0;
for (const [id, s] of starts) {
  const f = finishes.get(id);
  const from = boundTo(s), to = f && boundTo(f);
  const ok = f && f.bp === 'e' && from && to && !/GPU \d+/.test(names.get(key(s)) || '') && /GPU \d+/.test(names.get(key(f)) || '') &&
    from.ev.args && to.ev.args && from.ev.args.seq !== undefined && from.ev.args.seq === to.ev.args.seq;
  if (!ok) {
    if (!flowBad) console.error('a flow that does not join a call to its own GPU work: ' + JSON.stringify([s, f, from && from.ev, to && to.ev]));
    flowBad++;
  }
}
for (const id of finishes.keys()) if (!starts.has(id)) flowBad++;
check(flowBad === 0, 'every flow goes from a call on a thread to the GPU work of that call (' + flowBad + ' do not)');

// Counters: operations running never negative and back to 0; bytes moved never shrinking, and in total
// the bytes of the report's transfers.
const counterEvents = events.filter((e) => e.ph === 'C').sort((a, b) => a.ts - b.ts);
const counters = new Set(counterEvents.map((e) => e.name));
check([...counters].some((n) => /operations running/.test(n)), 'a GPU busy counter');
if ((report.transfers || []).length) check([...counters].some((n) => /bytes moved/.test(n)), 'a bytes moved counter');
const lastValue = new Map();
let counterBad = 0;
for (const e of counterEvents) {
  const k = e.pid + '/' + e.name;
  const prev = lastValue.get(k) || {};
  for (const [series, v] of Object.entries(e.args || {})) {
    if (typeof v !== 'number' || !(v >= 0)) counterBad++;
    if (/bytes moved/.test(e.name) && v < (prev[series] || 0)) counterBad++;
  }
  lastValue.set(k, e.args);
}
check(counterBad === 0, 'counter values are numbers >= 0, bytes moved never shrinks (' + counterBad + ' are not)');
let movedTotal = 0;
for (const [k, args] of lastValue) {
  if (/operations running/.test(k)) check(args.running === 0, k + ' ends at 0 (' + args.running + ')');
  if (/bytes moved/.test(k)) movedTotal += Object.values(args).reduce((a, v) => a + v, 0);
}
// GPU memory: a counter track per process and memory space of the report, peaking at its peak and ending
// at what was still in use (these programs allocate with the synchronous calls, counted alike).
for (const m of report.memory || []) {
  const name = m.space === 'pinned_host' ? 'GPU memory: pinned host' : 'GPU memory: ' + m.space + ' ' + m.device;
  const values = counterEvents.filter((e) => e.pid === m.pid && e.name === name).map((e) => e.args['in use (bytes)']);
  check(values.length > 0 && Math.max(...values) === m.peak_bytes && values[values.length - 1] === m.in_use_end_bytes,
        name + ' of pid ' + m.pid + ': peaks at the report peak_bytes ' + m.peak_bytes + ' and ends at in_use_end_bytes ' +
        m.in_use_end_bytes + ' (' + values.length + ' values, max ' + (values.length ? Math.max(...values) : '-') + ')');
  // With stream-ordered pools, a second track: in use plus what they keep unused, peaking at the report's floor.
  const held = counterEvents.filter((e) => e.pid === m.pid && e.name === name + " held (pools' reserve, at least)").map((e) => e.args['held (bytes)']);
  const heldRows = (m.held_series || []).length;
  check(heldRows ? held.length > 0 && Math.max(...held) === m.peak_held_min_bytes : held.length === 0,
        name + ' of pid ' + m.pid + ': a held track exactly where the report has pools (' + held.length + ' values, report ' +
        heldRows + ' points, peak ' + (m.peak_held_min_bytes || 0) + ')');
}
const reportBytes = (report.transfers || []).reduce((a, t) => a + t.bytes, 0);
check(movedTotal === reportBytes, 'bytes moved counters add up to the report transfers (' + movedTotal + ' vs ' + reportBytes + ')');

// The GPU work equals the capture's timed operations.
const timed = report.processes.reduce((a, p) => a + p.timed_ops, 0);
const gpuSlices = streamTracks.reduce((a, k) => a + slices.get(k).length, 0);
check(gpuSlices >= timed, 'a GPU slice per timed operation (' + gpuSlices + ' slices, ' + timed + ' timed operations)');

// GPU slices whose time is only an upper bound (blocking copies and memsets on an idle stream) are the
// ones the report counts as such on its devices, and only copies or memsets.
const boundSlices = streamTracks.flatMap((k) => slices.get(k)).filter((s) => (s.ev.args || {}).gpu_time === 'upper_bound');
const boundOps = (report.devices || []).reduce((a, d) => a + (d.upper_bound_ops || 0), 0);
check(boundSlices.length === boundOps, 'a GPU slice marked upper_bound per bounded operation of the report (' +
      boundSlices.length + ' slices, ' + boundOps + ' operations)');
check(boundSlices.every((s) => /^gpu,(copy|memset)$/.test(s.ev.cat)), 'only copies and memsets are marked upper_bound');

// Operations the GPU-timing budget left untimed, drawn where the device timeline placed them: flagged
// estimated in their args and category (the name stays the work's), one per operation the report's
// devices count as estimated, and never also called an upper bound.
const gpuAll = streamTracks.flatMap((k) => slices.get(k));
const estimatedSlices = gpuAll.filter((s) => (s.ev.args || {}).estimated === true);
const estimatedOps = (report.devices || []).reduce((a, d) => a + (d.estimated_ops || 0), 0);
check(estimatedSlices.length === estimatedOps, 'a GPU slice marked estimated per estimated operation of the report (' +
      estimatedSlices.length + ' slices, ' + estimatedOps + ' operations)');
check(estimatedSlices.every((s) => /^gpu,estimated,(kernel|copy|memset|graph|other)$/.test(s.ev.cat) && s.ev.args.gpu_time === 'estimated'),
      'estimated slices have the category gpu,estimated,KIND and gpu_time "estimated"');
check(gpuAll.every((s) => ((s.ev.args || {}).estimated === true) === /(^|,)estimated(,|$)/.test(s.ev.cat)),
      'a GPU slice is in the estimated category exactly when its args say estimated');
// Their names are their work's: an estimated kernel is named as the report's kernel table names it (a
// kernel whose every launch lost its timing, a held-up call on a loaded machine, has no measured slice
// to compare with, but it is in the table).
const kernelNames = new Set((report.kernels || []).map((k) => k.name));
const estimatedKernels = estimatedSlices.filter((s) => /,kernel$/.test(s.ev.cat));
check(estimatedKernels.every((s) => kernelNames.has(s.ev.name)),
      'estimated kernel slices keep the names of their kernels (' +
      estimatedKernels.filter((s) => !kernelNames.has(s.ev.name)).map((s) => s.ev.name).slice(0, 3).join(', ') + ')');
check(estimatedSlices.every((s) => typeof s.ev.name === 'string' && s.ev.name.length > 0), 'estimated slices are named');

console.log((failures ? 'FAILED ' : 'ok ') + tracePath + ': ' + events.length + ' events, ' + threadTracks.length +
            ' thread tracks, ' + streamTracks.length + ' stream tracks, ' + starts.size + ' flows, ' + estimatedSlices.length +
            ' estimated GPU slices, counters: ' +
            [...counters].join(', '));
process.exit(failures ? 1 : 0);
