#!/usr/bin/env bash
# tests/report/setup_failures.sh: setup and query calls are hooked for their failures only (issue 28). Runs
# drv_setup_fail in one mode with and without gpuspy (its output and exit status must be the same) and holds
# the report to the simulated driver's trace of every call:
#   every call of a failure-only API that failed is in the report (API, count by error code), and no call of
#   one that succeeded is (the wrappers record nothing on success);
#   binding: every recorded call failed, so calls-failed names the first failure (cuCtxGetDevice_v2 with no
#     context, as numba 0.56 calls CUDA 13's), its error, and its site askContextDevice (drv_setup_fail.c);
#   mixed: the program works, no calls-failed; the text report's API table names each failed setup call
#     with its error, and its call sites list the failing global lookup's site (lookUpGlobal).
# usage: setup_failures.sh GPUSPY PROGRAM MODE WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 mode=$3 work=$4
rm -rf "$work" && mkdir -p "$work/trace" || exit 2
"$prog" "$mode" > "$work/plain.out" 2> "$work/plain.err"
plain_rc=$?
SIMCUDA_TRACE="$work/trace/trace.%p.jsonl" SIMCUDA_TRACE_CALLS=1 \
    "$gpuspy" record --sim -f -o "$work/capture.gspy" -- "$prog" "$mode" > "$work/record.out" 2> "$work/record.err"
rc=$?
[[ $rc -eq $plain_rc ]] || { cat "$work/record.err"; echo "setup_failures.sh: FAIL: exit status $rc under gpuspy, $plain_rc without"; exit 1; }
# record prints its report after the program's own output: that output must be the program's, byte for byte.
size=$(stat -c %s "$work/plain.out")
if ! head -c "$size" "$work/record.out" | cmp -s - "$work/plain.out" ||
    [[ "$(tail -c +$((size + 1)) "$work/record.out" | head -n 1)" != "gpuspy report:"* ]]; then
    diff "$work/plain.out" "$work/record.out"
    echo "setup_failures.sh: FAIL: the program's output differs under gpuspy"
    exit 1
fi
"$gpuspy" report --format json "$work/capture.gspy" > "$work/report.json" || exit 1
"$gpuspy" report "$work/capture.gspy" > "$work/report.txt" || exit 1
python3 - "$mode" "$plain_rc" "$work/report.json" "$work/report.txt" "$work"/trace/*.jsonl <<'PY'
import collections, json, sys
mode, plain_rc = sys.argv[1], int(sys.argv[2])
report = json.load(open(sys.argv[3]))
text = open(sys.argv[4]).read()
calls = [json.loads(l) for p in sys.argv[5:] for l in open(p)]
calls = [c for c in calls if c.get("type") == "call"]
def fail(msg):
    sys.exit(f"setup_failures.sh ({mode}): FAIL: " + msg)
# The failure-only APIs this program calls (the report's category "query" for those it recorded).
query_apis = {"cuInit", "cuDeviceGet", "cuDeviceGetAttribute", "cuCtxGetDevice_v2", "cuModuleGetGlobal_v2"}
called = {c["api"] for c in calls}
if not query_apis & called:
    fail("the trace has none of the program's setup calls: " + str(sorted(called)))
truth = collections.defaultdict(collections.Counter)
for c in calls:
    if c["api"] in query_apis and c["rc"] != 0:
        truth[c["api"]][c["rc"]] += 1
if not truth:
    fail("the trace has no failed setup call")
rows = {a["api"]: a for a in report["apis"]}
for api in query_apis & called:
    row = rows.get(api)
    if api not in truth:
        if row:
            fail(f"{api} never failed, yet the report has {row['count']} calls of it (a success was recorded)")
        continue
    if not row:
        fail(f"the report does not list {api}, which failed {sum(truth[api].values())} times")
    got = {e["code"]: e["calls"] for e in row.get("errors_by_code", [])}
    if got != dict(truth[api]) or row["count"] != sum(truth[api].values()) or row["errors"] != row["count"]:
        fail(f"{api}: the report has {row['count']} calls, errors {got}; the driver failed {dict(truth[api])}")
    if row["category"] != "query":
        fail(f"{api} is not in category query: {row['category']}")
first = min((c for c in calls if c["api"] in truth and c["rc"] != 0), key=lambda c: c["start"])
found = [f for f in report["findings"] if f["rule"] == "calls-failed"]
sites = {s["id"]: s for s in report["callsites"]}
names = {201: "CUDA_ERROR_INVALID_CONTEXT", 101: "CUDA_ERROR_INVALID_DEVICE", 500: "CUDA_ERROR_NOT_FOUND"}
if mode == "binding":
    if plain_rc != 1:
        fail(f"the program returned {plain_rc}, not 1")
    if len(found) != 1:
        fail(f"expected one calls-failed finding, got {[f['rule'] for f in report['findings']]}")
    msg = found[0]["message"]
    if first["api"] != "cuCtxGetDevice_v2" or first["rc"] != 201:
        fail(f"the driver's first failure is {first['api']} ({first['rc']}), not cuCtxGetDevice_v2's")
    for want in (f"The first, {first['api']} ", f"{names[first['rc']]} ({first['rc']})", "askContextDevice (drv_setup_fail.c:",
                 f"({sum(sum(v.values()) for v in truth.values())} calls)", "cuDeviceGet 1x CUDA_ERROR_INVALID_DEVICE"):
        if want not in msg:
            fail(f"the finding does not say {want!r}: {msg}")
    site = sites.get(found[0]["callsites"][0], {})
    if not site.get("label", "").startswith("askContextDevice (drv_setup_fail.c:") or site.get("category") != "setup":
        fail(f"the finding's first site is not askContextDevice's setup site: {site}")
    if "calls-failed" not in text.split("== Findings")[0]:
        fail("the verdict does not list calls-failed")
else:
    if plain_rc != 0:
        fail(f"the program returned {plain_rc}, not 0")
    if found:
        fail("calls-failed on a program whose other calls worked: " + found[0]["message"])
    for api, codes in truth.items():
        for code, n in codes.items():
            want = f"{api} [{n} error{'s' if n > 1 else ''}: {names[code]}]"
            if want not in " ".join(text.split()):  # the table wraps long names
                fail(f"the text report's API table does not say {want!r}")
    if not any(s["label"].startswith("lookUpGlobal (drv_setup_fail.c:") and s["category"] == "setup" and
               s["count"] == sum(truth["cuModuleGetGlobal_v2"].values()) for s in report["callsites"]):
        fail("no setup call site lookUpGlobal with the failed lookups: " + str([(s["label"], s["category"]) for s in report["callsites"]]))
print(f"setup_failures.sh ({mode}): ok: " + ", ".join(f"{a} {dict(c)}" for a, c in sorted(truth.items())) +
      f"; first {first['api']} -> {first['rc']}")
PY
