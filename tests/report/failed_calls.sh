#!/usr/bin/env bash
# tests/report/failed_calls.sh: a program every one of whose recorded CUDA calls fails (drv_all_fail: no
# context current, as a binding that calls CUDA 13's entry points with their old signatures) gets a report
# that names its first failing call, that call's error and its site (issue 28: such a capture read "no process
# made a CUDA call it saw"), held to the simulated driver's trace of its calls; no finding advises freeing
# memory for allocations the driver refused for another reason.
# usage: failed_calls.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work/trace" || exit 2
SIMCUDA_TRACE="$work/trace/trace.%p.jsonl" SIMCUDA_TRACE_CALLS=1 \
    "$gpuspy" record --sim -f -o "$work/capture.gspy" -- "$prog" > "$work/record.out" 2>&1
rc=$?
[[ $rc -eq 1 ]] || { cat "$work/record.out"; echo "failed_calls.sh: FAIL: gpuspy record returned $rc, not the program's 1"; exit 1; }
"$gpuspy" report --format json "$work/capture.gspy" > "$work/report.json" || exit 1
"$gpuspy" report "$work/capture.gspy" > "$work/report.txt" || exit 1
python3 - "$work/report.json" "$work/report.txt" "$work"/trace/*.jsonl <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
calls = [json.loads(l) for p in sys.argv[3:] for l in open(p)]
calls = [c for c in calls if c.get("type") == "call"]
# The truth: the first call of the driver's that failed, among those gpuspy records (cuInit and
# cuGetErrorName are not recorded).
recorded = {a["api"] for a in report["apis"]}
failed = sorted((c for c in calls if c["rc"] != 0 and c["api"] in recorded), key=lambda c: c["start"])
if not failed:
    sys.exit("failed_calls.sh: FAIL: the trace has no failed call of a recorded API")
first = failed[0]
names = {"201": "CUDA_ERROR_INVALID_CONTEXT"}
def fail(msg):
    sys.exit("failed_calls.sh: FAIL: " + msg)
found = [f for f in report["findings"] if f["rule"] == "calls-failed"]
if len(found) != 1:
    fail(f"expected one calls-failed finding, got {len(found)}: {[f['rule'] for f in report['findings']]}")
f = found[0]
msg = f["message"]
if f["severity"] != "high":
    fail("calls-failed is not high: " + f["severity"])
if f"The first, {first['api']} " not in msg or f"({first['rc']})" not in msg:
    fail(f"the finding does not name the first failing call {first['api']} ({first['rc']}): {msg}")
if names[str(first["rc"])] not in msg:
    fail("the finding does not name the error " + names[str(first["rc"])] + ": " + msg)
if str(len(failed)) + " calls" not in msg:
    fail(f"the finding does not count the {len(failed)} failed calls: {msg}")
sites = {s["id"]: s for s in report["callsites"]}
site = sites.get(f["callsites"][0], {})
if not site.get("label", "").startswith("tryAllocate (drv_all_fail.c:"):
    fail("the finding's first call site is not the failing allocation's: " + site.get("label", "?"))
if "tryAllocate (drv_all_fail.c:" not in msg:
    fail("the finding does not name the first call's site: " + msg)
if any(x["rule"] == "allocation-failed" for x in report["findings"]):
    fail("allocation-failed advises on allocations refused for want of a context")
if "free memory" in text:
    fail("the text report advises freeing memory")
if "calls-failed" not in text.split("== Findings")[0]:
    fail("the verdict does not list calls-failed")
print(f"failed_calls.sh: ok: {len(failed)} failed calls, the first {first['api']} -> {names[str(first['rc'])]} at {site['label']}")
PY
