#!/usr/bin/env python3
"""timed_only.py REPORT DUMP > OUT: the report as it would read if its device figures took the timed
operations only (the busy union of the capture's GpuSpan records, and the GPU's share of each wait read
off that union), as gpuspy's report did before the device timeline. report_vs_trace must reject it on a
launch-heavy program (tests/report/CMakeLists.txt, report.timeline_loops.*.timed_only_fails)."""
import json
import re
import sys


def union(spans, lo, hi):
    out = []
    for b, e in sorted(spans):
        b, e = max(b, lo), min(e, hi)
        if e <= b:
            continue
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def overlap(merged, b, e):
    return sum(max(0, min(e, y) - max(b, x)) for x, y in merged)


def main():
    report = json.load(open(sys.argv[1]))
    call_re = re.compile(r"^pid (\d+) @\d+ Call #\d+ (\S+) \S+ tid=\d+ t=(\d+)\.\.(\d+) .* dev=(-?\d+) ")
    span_re = re.compile(r"^pid (\d+) @\d+ GpuSpan #\d+ dev=(-?\d+) t=(\d+)\.\.(\d+)")
    spans, calls = {}, []
    for line in open(sys.argv[2]):
        m = span_re.match(line)
        if m:
            spans.setdefault((int(m[1]), int(m[2])), []).append((int(m[3]), int(m[4])))
            continue
        m = call_re.match(line)
        if m:
            calls.append((int(m[1]), m[2], int(m[3]), int(m[4]), int(m[5])))
    active = {p["pid"]: (p["active_begin_ns"], p["active_end_ns"]) for p in report["processes"]}
    merged = {}
    for d in report["devices"]:
        lo, hi = active[d["pid"]]
        m = merged[(d["pid"], d["id"])] = union(spans.get((d["pid"], d["id"]), []), lo, hi)
        busy = sum(e - b for b, e in m)
        pct = 100.0 * busy / (hi - lo) if hi > lo else 0
        d.update(busy_ns=busy, busy_pct=pct, busy_ns_min=busy, busy_ns_max=busy, busy_pct_min=pct, busy_pct_max=pct,
                 busy_basis="measured", idle_gap_ns=sum(m[i][0] - m[i - 1][1] for i in range(1, len(m))))
    for s in report["syncs"]:
        s["gpu_busy_ns"] = sum(overlap(merged.get((pid, dev), []), b, e)
                               for pid, api, b, e, dev in calls if api == s["api"])
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
