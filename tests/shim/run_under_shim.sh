#!/usr/bin/env bash
# run_under_shim.sh: runs one program twice on the simulated driver, without and with libgpuspy.so, and
# requires the same exit status and stdout; then checks every process's capture against that process's
# ground-truth trace with compare_capture.
# Usage: run_under_shim.sh COMPARE LIBGPUSPY WORKDIR [compare options...] -- APP [ARGS...]
# Environment: LD_LIBRARY_PATH must put the simulated libcuda.so.1 first. SHIM_EXPECT_RC (default 0) is
# the exit status the program must have; SHIM_NO_COMPARE=1 skips compare_capture (fault-injection runs).
set -uo pipefail
compare=$1 lib=$2 work=$3
shift 3
opts=()
while [[ $# -gt 0 && $1 != "--" ]]; do opts+=("$1"); shift; done
shift
rm -rf "$work"
mkdir -p "$work/base" "$work/shim"

SIMCUDA_TRACE="$work/base/trace.%p.jsonl" "$@" >"$work/base.out" 2>"$work/base.err"
rc0=$?
LD_PRELOAD="$lib" GPUSPY_OUTPUT="$work/shim/cap.%p.gspy" SIMCUDA_TRACE="$work/shim/trace.%p.jsonl" \
    "$@" >"$work/shim.out" 2>"$work/shim.err"
rc1=$?
fail=0
if [[ $rc0 -ne $rc1 ]]; then
    echo "FAIL: exit status $rc0 without gpuspy, $rc1 with it" >&2
    fail=1
fi
if [[ ${SHIM_EXPECT_RC:-0} != any && $rc0 -ne ${SHIM_EXPECT_RC:-0} ]]; then
    echo "FAIL: exit status $rc0, expected ${SHIM_EXPECT_RC:-0}" >&2
    fail=1
fi
if ! diff -u "$work/base.out" "$work/shim.out" >&2; then
    echo "FAIL: stdout differs with gpuspy" >&2
    fail=1
fi
if { grep -v '^gpuspy:' "$work/shim.err" || true; } | diff -q - "$work/base.err" >/dev/null; then :; else
    echo "note: stderr differs (not a failure):" >&2
    diff "$work/base.err" "$work/shim.err" | head -5 >&2
fi
[[ ${SHIM_NO_COMPARE:-0} == 1 ]] && exit $fail
if [[ ${SHIM_CAPTURE_ONLY:-0} == 1 ]]; then
    # The process ended abruptly (exit from a thread): device work after the flush is not in the
    # capture; it must still be complete as a stream (End record) and readable.
    shopt -s nullglob
    caps=("$work"/shim/cap.*.gspy)
    [[ ${#caps[@]} -ge 1 ]] || { echo "FAIL: no capture" >&2; exit 1; }
    for c in "${caps[@]}"; do "$compare" "${opts[@]}" "$c" - || fail=1; done
    exit $fail
fi

shopt -s nullglob
traces=("$work"/shim/trace.*.jsonl)
caps=("$work"/shim/cap.*.gspy)
if [[ ${#traces[@]} -eq 0 ]]; then
    echo "FAIL: no ground-truth trace written" >&2
    exit 1
fi
for t in "${traces[@]}"; do
    pid=${t##*/trace.}
    pid=${pid%.jsonl}
    cap="$work/shim/cap.$pid.gspy"
    if [[ ! -f $cap ]]; then
        if grep -q '"type":"op"' "$t"; then
            echo "FAIL: process $pid did device work but left no capture" >&2
            fail=1
        fi
        continue
    fi
    "$compare" "${opts[@]}" "$cap" "$t" || fail=1
done
if [[ ${#caps[@]} -gt ${#traces[@]} ]]; then
    echo "note: ${#caps[@]} captures for ${#traces[@]} traces" >&2
fi
exit $fail
