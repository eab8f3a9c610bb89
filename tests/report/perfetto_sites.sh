#!/usr/bin/env bash
# tests/report/perfetto_sites.sh: the Perfetto export names each call's site as the report does (issue 28).
# cufft_plan's cufftExecC2C and cufftExecR2C tail-jump into cufftXtExec, the frame the stack shows: the report
# names them by the call instruction's callee; the export's call slices (args.site) must carry the same labels,
# never a name the report does not give (before: "... -> cufftXtExec").
# usage: perfetto_sites.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 2
"$gpuspy" record --sim -f -o "$work/run.gspy" -- "$prog" > "$work/run.out" 2>&1 || { cat "$work/run.out"; exit 1; }
"$gpuspy" report --format json "$work/run.gspy" > "$work/report.json" || exit 1
"$gpuspy" export --format perfetto -f -o "$work/trace.json" "$work/run.gspy" || exit 1
python3 - "$work/report.json" "$work/trace.json" <<'PY'
import json, sys
report, trace = (json.load(open(p)) for p in sys.argv[1:3])
labels = {s["label"] for s in report["callsites"]}
events = trace["traceEvents"] if isinstance(trace, dict) else trace
sites = [e["args"]["site"] for e in events if e.get("ph") == "X" and "site" in e.get("args", {})]
if not sites:
    sys.exit("perfetto_sites.sh: FAIL: no call slice carries a site")
unknown = sorted({s for s in sites if s and s not in labels})
if unknown:
    sys.exit("perfetto_sites.sh: FAIL: sites the report does not name: " + "; ".join(unknown))
for call in ("cufftExecC2C", "cufftExecR2C"):
    if not any("\u2192 " + call + " (" in s for s in sites):
        sys.exit(f"perfetto_sites.sh: FAIL: no call slice's site names {call}: " + "; ".join(sorted(set(sites))))
if any("cufftXtExec" in s for s in sites):
    sys.exit("perfetto_sites.sh: FAIL: a site names cufftXtExec, the export's jump target, not the user's call")
print(f"perfetto_sites.sh: ok: {len(sites)} call slices, {len(set(sites))} sites, all the report's labels")
PY
