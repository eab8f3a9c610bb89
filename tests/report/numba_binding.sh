#!/usr/bin/env bash
# tests/report/numba_binding.sh: Debian's python3-numba (0.56) run on the simulated CUDA 13 driver, as in issue
# 28: numba calls cuCtxGetDevice_v2 with no context and gives up. With and without gpuspy the program's output,
# last error line and exit status are the same, and the report names the failed call (category query), its
# error as many times as the driver's trace has it, and the Python line that reached it; a calls-failed
# finding says the program gave up there though its allocation before it worked. Exit 77 (skipped,
# ctest says so) when PYTHON cannot import numba: `apt-get install python3-numba` and configure again.
# usage: numba_binding.sh GPUSPY PYTHON WORKDIR
set -uo pipefail
gpuspy=$1 python=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$python" -c 'import numba, numpy' 2> /dev/null; then
    echo "numba_binding.sh: SKIP: $python cannot import numba and numpy (apt-get install python3-numba)"
    exit 77
fi
rm -rf "$work" && mkdir -p "$work/trace" || exit 2
"$python" "$here/numba_binding.py" > "$work/plain.out" 2> "$work/plain.err"
plain_rc=$?
SIMCUDA_TRACE="$work/trace/trace.%p.jsonl" SIMCUDA_TRACE_CALLS=1 \
    "$gpuspy" record --sim -f -o "$work/capture.gspy" -- "$python" "$here/numba_binding.py" > "$work/record.out" 2> "$work/record.err"
rc=$?
[[ $rc -eq $plain_rc ]] || { cat "$work/record.err"; echo "numba_binding.sh: FAIL: exit status $rc under gpuspy, $plain_rc without"; exit 1; }
size=$(stat -c %s "$work/plain.out")
head -c "$size" "$work/record.out" | cmp -s - "$work/plain.out" || { echo "numba_binding.sh: FAIL: the program's output differs"; exit 1; }
last_error=$(grep -m1 '^numba.*Error' "$work/plain.err")
grep -qxF "$last_error" "$work/record.err" || { echo "numba_binding.sh: FAIL: the error '$last_error' is not raised under gpuspy"; exit 1; }
"$gpuspy" report --format json "$work/capture.gspy" > "$work/report.json" || exit 1
python3 - "$plain_rc" "$last_error" "$work/report.json" "$work"/trace/*.jsonl <<'PY'
import collections, json, sys
plain_rc, last_error, report = int(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
calls = [json.loads(l) for p in sys.argv[4:] for l in open(p)]
calls = [c for c in calls if c.get("type") == "call"]
def fail(msg):
    sys.exit("numba_binding.sh: FAIL: " + msg)
if plain_rc != 1 or "cuCtxGetDevice" not in last_error or "CUDA_ERROR_INVALID_CONTEXT" not in last_error:
    fail(f"numba did not fail in cuCtxGetDevice as in the issue (exit {plain_rc}): {last_error}")
truth = collections.Counter(c["rc"] for c in calls if c["api"] == "cuCtxGetDevice_v2" and c["rc"] != 0)
if truth != {201: 1}:
    fail(f"the driver's trace has cuCtxGetDevice_v2 failures {dict(truth)}, not one 201")
row = {a["api"]: a for a in report["apis"]}.get("cuCtxGetDevice_v2")
if not row or row["category"] != "query" or {e["code"]: e["calls"] for e in row["errors_by_code"]} != dict(truth):
    fail(f"the report does not name cuCtxGetDevice_v2's failure as the trace has it: {row}")
sites = [s for s in report["callsites"] if s["category"] == "setup" and "cuCtxGetDevice_v2" in s.get("apis", [])]
if not sites or not sites[0]["label"].startswith("<module> (numba_binding.py:"):
    fail("no setup call site at the Python line that reached it: " + str([(s["label"], s["category"]) for s in report["callsites"]]))
# numba made one call that worked (an allocation) before the one it gave up at: calls-failed still names it,
# with its error and the Python line, the site listed first.
found = [f for f in report["findings"] if f["rule"] == "calls-failed"]
if len(found) != 1 or found[0]["severity"] != "high":
    fail("no HIGH calls-failed finding for the call numba gave up at: " + str([f["rule"] for f in report["findings"]]))
msg = found[0]["message"]
if "cuCtxGetDevice_v2" not in msg or "CUDA_ERROR_INVALID_CONTEXT" not in msg or sites[0]["label"] not in msg:
    fail("calls-failed does not name the call, its error and its line: " + msg)
first_site = found[0]["callsites"][0] if found[0]["callsites"] else None
if not first_site or report["callsites"][first_site["id"] if isinstance(first_site, dict) else first_site]["label"] != sites[0]["label"]:
    fail("calls-failed does not list the failing call's site first: " + str(found[0]["callsites"][:2]))
print(f"numba_binding.sh: ok: cuCtxGetDevice_v2 {dict(truth)} named at {sites[0]['label']}; calls-failed: {msg[:120]}")
PY
