#!/usr/bin/env bash
# tests/hardening/output_faults.sh: the capture cannot be written. The app (storm.c) must end as it
# does without gpuspy (exit status, stdout) and gpuspy must say why exactly once on stderr.
#   enospc:        GPUSPY_OUTPUT=/dev/full: every write fails with ENOSPC
#   cannot_create: GPUSPY_OUTPUT in a directory that does not exist
#   no_collector:  GPUSPY_SOCKET where nobody listens, and the fallback file on /dev/full: two lines
# Usage: output_faults.sh MODE LIBGPUSPY STORM WORKDIR
# Environment: as collector_faults.sh.
mode=$1 lib=$2 storm=$3 work=$4
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"

case $mode in
enospc) env=(GPUSPY_OUTPUT=/dev/full) expect=("^gpuspy: writing the capture failed \(No space left on device\); recording is off$") ;;
cannot_create) env=(GPUSPY_OUTPUT="$PWD/missing/dir/cap.gspy")
    expect=("^gpuspy: cannot create $PWD/missing/dir/cap.gspy \(No such file or directory\); recording is off$") ;;
no_collector) env=(GPUSPY_SOCKET="$PWD/nobody.sock" GPUSPY_OUTPUT=/dev/full)
    expect=("^gpuspy: no collector at $PWD/nobody.sock \(No such file or directory\); writing a capture file instead$"
            "^gpuspy: writing the capture failed \(No space left on device\); recording is off$") ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac

hz_run . base "$storm" 4 5000
hz_run . shim env LD_PRELOAD="$preload" "${env[@]}" "$storm" 4 5000
hz_same . base shim
lines=$(hz_gpuspy_lines shim.err)
[[ $lines -eq ${#expect[@]} ]] || hz_fail "$lines lines from gpuspy on stderr, expected ${#expect[@]}: $(grep '^gpuspy:' shim.err)"
for e in "${expect[@]}"; do
    grep -qE "$e" shim.err || hz_fail "no line matching '$e' on stderr: $(grep '^gpuspy:' shim.err)"
done
ls ./*.gspy missing 2>/dev/null && hz_fail "a capture file was created"
exit $hz_failed
