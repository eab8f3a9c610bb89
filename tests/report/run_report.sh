#!/usr/bin/env bash
# run_report.sh: one acceptance test of the report: runs APP plainly, then under `gpuspy record --sim`
# with the simulated driver's ground truth on (SIMCUDA_TRACE, one file per process, and
# SIMCUDA_TRACE_CALLS=1), then checks `gpuspy report --format json` against that trace with
# report_vs_trace. The app must exit 0 both times and print the same stdout under gpuspy (which then
# appends its text report).
# Usage: run_report.sh WORKDIR GPUSPY REPORT_VS_TRACE EXPECT APP_SRC_DIR -- APP [ARGS...]
set -uo pipefail

if [[ $# -lt 7 || $6 != "--" ]]; then
    echo "usage: $0 WORKDIR GPUSPY REPORT_VS_TRACE EXPECT APP_SRC_DIR -- APP [ARGS...]" >&2
    exit 2
fi
work=$1 gpuspy=$2 checker=$3 expect=$4 src=$5
shift 6
rm -rf "$work"
mkdir -p "$work/trace"

echo "run_report.sh: plain run: $*"
"$@" > "$work/plain.out"
rc=$?
if [[ $rc -ne 0 ]]; then
    echo "run_report.sh: FAIL: $1 exited with status $rc without gpuspy (expected 0)" >&2
    exit 1
fi

echo "run_report.sh: gpuspy record --sim -o $work/capture.gspy -f -- $*"
SIMCUDA_TRACE="$work/trace/trace.%p.jsonl" SIMCUDA_TRACE_CALLS=1 \
    "$gpuspy" record --sim -o "$work/capture.gspy" -f -- "$@" > "$work/record.out" 2> "$work/record.err"
rc=$?
cat "$work/record.err" >&2
if [[ $rc -ne 0 ]]; then
    echo "run_report.sh: FAIL: gpuspy record returned $rc (the app's exit status; expected 0)" >&2
    exit 1
fi

# The app's output comes first, unchanged; gpuspy's text report follows it.
source "$(dirname "${BASH_SOURCE[0]}")/same_stdout.sh"
same_stdout run_report.sh "$work/plain.out" "$work/record.out" || exit 1
plain_size=$(stat -c %s "$work/plain.out")
if [[ "$(tail -c +$((plain_size + 1)) "$work/record.out" | head -n 1)" != "gpuspy report:"* ]]; then
    echo "run_report.sh: FAIL: after the app's stdout, gpuspy record did not print its report" >&2
    tail -c +$((plain_size + 1)) "$work/record.out" | head -5 >&2
    exit 1
fi

if ! "$gpuspy" report "$work/capture.gspy" --format json > "$work/report.json"; then
    echo "run_report.sh: FAIL: gpuspy report --format json failed" >&2
    exit 1
fi
if ! "$gpuspy" dump "$work/capture.gspy" > "$work/dump.txt"; then
    echo "run_report.sh: FAIL: gpuspy dump failed" >&2
    exit 1
fi
"$checker" --report "$work/report.json" --dump "$work/dump.txt" --expect "$expect" --app-src "$src" "$work/trace"
rc=$?
if [[ $rc -ne 0 ]]; then
    echo "run_report.sh: FAIL: the report disagrees with the trace (report_vs_trace status $rc); files in $work" >&2
    exit 1
fi
# The replay (gpuspy whatif): the capture's dependency graph replayed unchanged gives back each process's
# measured wall time within 5%, and each fix that applies predicts a wall time no longer than the run's.
if ! "$gpuspy" whatif "$work/capture.gspy" --format json > "$work/whatif.json"; then
    echo "run_report.sh: FAIL: gpuspy whatif failed" >&2
    exit 1
fi
python3 - "$work/whatif.json" <<'PY' || { echo "run_report.sh: FAIL: the replay; files in $work" >&2; exit 1; }
import json, sys
bad = 0
for p in json.load(open(sys.argv[1]))["processes"]:
    err = p["replay_error_pct"]
    print(f"{'ok  ' if abs(err) <= 5 else 'FAIL'} whatif pid {p['pid']}: replayed unchanged {p['unchanged']['wall_ns']} ns, "
          f"measured {p['measured_wall_ns']} ns ({err:+.2f}%)")
    bad += abs(err) > 5
    for s in p["scenarios"]:
        if s["predicted"]["wall_ns"] > p["unchanged"]["wall_ns"] * 1.001:
            print(f"FAIL whatif pid {p['pid']}: {s['name']} predicts {s['predicted']['wall_ns']} ns, longer than unchanged")
            bad += 1
sys.exit(1 if bad else 0)
PY
exit 0
