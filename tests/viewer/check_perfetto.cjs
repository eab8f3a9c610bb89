// tests/viewer/check_perfetto.cjs: asserts the structure of `gpuspy export --format perfetto` of a real
// capture: slices nest per track, every flow start has its finish and both bind inside a slice, times are
// microseconds on the host clock (inside the process's span from `gpuspy report --format json`), every
// track is named, there is a track per host thread and per GPU stream, and the counters are there.
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
  if (typeof e.ts !== 'number' || !(e.ts >= 0) || Math.abs(e.ts * 1000 - ns(e.ts)) > 1e-3) {
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
check(threadTracks.length >= 1 && threadTracks.length <= threads,
      'a track per host thread that made calls: ' + threadTracks.length + ' of ' + threads + ' threads');
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

// Host clock: calls inside [active_begin, active_end] of their process; GPU work inside the process's
// active span extended by its wall time (work may finish after the last call).
for (const p of report.processes) {
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
const inside = (e) => (slices.get(key(e)) || []).some((s) => s.b <= ns(e.ts) && ns(e.ts) <= s.e);
let flowBad = 0;
for (const [id, s] of starts) {
  const f = finishes.get(id);
  if (!f || f.bp !== 'e' || key(f) === key(s) || !inside(s) || !inside(f) || ns(f.ts) < ns(s.ts) - 1e6) flowBad++;
  else if (!/GPU \d+/.test(names.get(key(f)) || '')) flowBad++;
}
for (const id of finishes.keys()) if (!starts.has(id)) flowBad++;
check(flowBad === 0, 'every flow goes from a call to GPU work and both ends bind inside slices (' + flowBad + ' do not)');

// Counters.
const counters = new Set(events.filter((e) => e.ph === 'C').map((e) => e.name));
check([...counters].some((n) => /operations running/.test(n)), 'a GPU busy counter');
if ((report.transfers || []).length) check([...counters].some((n) => /bytes moved/.test(n)), 'a bytes moved counter');

// The GPU work equals the capture's timed operations.
const timed = report.processes.reduce((a, p) => a + p.timed_ops, 0);
const gpuSlices = streamTracks.reduce((a, k) => a + slices.get(k).length, 0);
check(gpuSlices >= timed, 'a GPU slice per timed operation (' + gpuSlices + ' slices, ' + timed + ' timed operations)');

console.log((failures ? 'FAILED ' : 'ok ') + tracePath + ': ' + events.length + ' events, ' + threadTracks.length +
            ' thread tracks, ' + streamTracks.length + ' stream tracks, ' + starts.size + ' flows, counters: ' +
            [...counters].join(', '));
process.exit(failures ? 1 : 0);
