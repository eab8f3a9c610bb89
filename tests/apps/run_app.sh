#!/usr/bin/env bash
# run_app.sh: runs one test program on the simulated driver and checks its ground-truth trace.
# Usage: SIMCUDA_TRACE=DIR/trace.%p.jsonl run_app.sh CHECK_TRACE [check_trace options...] -- APP [ARGS...]
# The trace directory (DIR) is emptied first, the program must exit 0, then check_trace reads every trace
# file in DIR (one per process) with the given options (--expect, --consts, --set ...).
set -uo pipefail

if [[ $# -lt 3 || -z "${SIMCUDA_TRACE:-}" ]]; then
    echo "usage: SIMCUDA_TRACE=DIR/trace.%p.jsonl $0 CHECK_TRACE [options] -- APP [ARGS...]" >&2
    exit 2
fi
check=$1
shift
opts=()
while [[ $# -gt 0 && $1 != "--" ]]; do
    opts+=("$1")
    shift
done
if [[ $# -lt 2 ]]; then
    echo "run_app.sh: missing '-- APP'" >&2
    exit 2
fi
shift
trace_dir=$(dirname "$SIMCUDA_TRACE")
rm -rf "$trace_dir"
mkdir -p "$trace_dir"

echo "run_app.sh: running $* (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}, SIMCUDA_TRACE=$SIMCUDA_TRACE)"
"$@"
rc=$?
if [[ $rc -ne 0 ]]; then
    echo "run_app.sh: FAIL: $1 exited with status $rc (expected 0)" >&2
    exit 1
fi
"$check" "${opts[@]}" "$trace_dir"
rc=$?
if [[ $rc -ne 0 ]]; then
    echo "run_app.sh: FAIL: the trace in $trace_dir does not match (check_trace status $rc)" >&2
    exit 1
fi
exit 0
