#!/usr/bin/env python3
"""make_selftest.py: rebuilds report_vs_trace's self-test inputs (this directory) from one run of
report.drv_late_dlopen, after the shim or the simulated driver changed what a run records.

    ctest -R '^report.drv_late_dlopen$'    # in a build tree: leaves its run in tests/report/runs/
    tests/report/selftest/make_selftest.py BUILD/tests/report/runs/drv_late_dlopen

Writes report.json (the real report), dump.txt (the Call, Clock and GpuSpan lines of its dump),
trace.jsonl (its trace) and the falsified copies bad_<what>.json, each of which the checker must
reject (tests/report/CMakeLists.txt)."""
import copy
import glob
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(run, "report.json")) as f:
        report = json.load(f)
    with open(os.path.join(run, "dump.txt")) as f:
        dump = [l for l in f if any(f" {kind} " in l for kind in ("Call", "Clock", "GpuSpan"))]
    traces = sorted(glob.glob(os.path.join(run, "trace", "*.jsonl")))
    if len(traces) != 1:
        sys.exit(f"expected one trace file in {run}/trace, found {len(traces)}")

    def write(name, doc):
        with open(os.path.join(here, name), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")

    write("report.json", report)
    with open(os.path.join(here, "dump.txt"), "w") as f:
        f.writelines(dump)
    with open(traces[0]) as src, open(os.path.join(here, "trace.jsonl"), "w") as f:
        f.write(src.read())

    # Each falsification is one the checker must catch: a count, bytes, mode, sync count, busy time
    # below the truth, GPU time far above it, a blocking copy's GPU time (an upper bound) below the
    # truth, a blocking copy on an idle stream whose span is called measured, a finding the expectation
    # says is absent.
    def falsified(name, change):
        doc = copy.deepcopy(report)
        change(doc)
        write(f"bad_{name}.json", doc)

    falsified("kernel_count", lambda d: d["kernels"][0].update(count=d["kernels"][0]["count"] + 1))
    falsified("bytes", lambda d: d["transfers"][0].update(bytes=d["transfers"][0]["bytes"] + 4))
    falsified("mode", lambda d: d["transfers"][0].update(mode="async" if d["transfers"][0]["mode"] == "sync" else "sync"))
    falsified("sync_count", lambda d: d["syncs"][0].update(count=d["syncs"][0]["count"] + 1))
    falsified("busy", lambda d: d["devices"][0].update(busy_ns=d["devices"][0]["busy_ns"] // 2))
    falsified("gpu_time", lambda d: d["kernels"][0].update(gpu_ns=d["kernels"][0]["gpu_ns"] * 3))
    bound = next(t for t in report["transfers"] if t["upper_bound_count"] > 0)
    at = report["transfers"].index(bound)
    falsified("bound_gpu_time", lambda d: d["transfers"][at].update(gpu_ns=1, upper_bound_gpu_ns=1))

    def called_measured(d):
        d["transfers"][at].update(gpu_time="measured", upper_bound_count=0, upper_bound_gpu_ns=0)
        d["devices"][0]["upper_bound_ops"] -= bound["upper_bound_count"]

    falsified("gpu_time_source", called_measured)
    falsified("finding", lambda d: d["findings"].append(
        {"rule": "sync-in-loop", "severity": "low", "message": "x", "count": 1, "ns": 1,
         "estimated_savings_ns": 0, "callsites": [0], "evidence": {}}))


if __name__ == "__main__":
    main()
