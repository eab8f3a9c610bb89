#!/usr/bin/env bash
# tests/python/check_unknown.sh: a CPython whose frame layout the shim has no row for (an older one than
# 3.9) runs under gpuspy with GPUSPY_PYTHON=1: the shim says so on stderr and keeps native stacks (no
# Python frame in the capture), and the program runs to its end.
# Usage: check_unknown.sh GPUSPY PYTHON CUDA_COPIES_PY RUNDIR
set -uo pipefail
gpuspy=$1 python=$2 script=$3 run=$4
rm -rf "$run" && mkdir -p "$run"
if ! GPUSPY_PYTHON=1 "$gpuspy" record --sim -o "$run/capture.gspy" -f -- "$python" "$script" main > "$run/record.out" 2>&1; then
    echo "check_unknown.sh: FAIL: the program or the record failed" >&2
    cat "$run/record.out" >&2
    exit 1
fi
"$gpuspy" dump "$run/capture.gspy" > "$run/dump.txt" || exit 2
fail=0
if ! grep -q "frame layout is not one gpuspy knows" "$run/record.out"; then
    echo "check_unknown.sh: FAIL: the shim did not say it keeps native stacks" >&2
    fail=1
fi
if grep -q "PyFrameDef" "$run/dump.txt"; then
    echo "check_unknown.sh: FAIL: Python frames in the capture of an interpreter without a known layout" >&2
    fail=1
fi
if ! grep -q "cudaMemcpy" "$run/dump.txt"; then
    echo "check_unknown.sh: FAIL: no cudaMemcpy in the capture" >&2
    fail=1
fi
exit $fail
