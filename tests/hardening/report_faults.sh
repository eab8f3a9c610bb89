#!/usr/bin/env bash
# tests/hardening/report_faults.sh: what `gpuspy record` and `gpuspy report` say when a capture is not
# what it should be, with the real shim on the simulated driver (storm.c plays the app; each run is
# compared with the same run without gpuspy).
#   cut_short:  the app is SIGKILLed mid-run (shim alone, GPUSPY_OUTPUT): its stream has no End record,
#               and the text report must say which process was cut short and that its figures are
#               lower bounds (before: only JSON's "ended": false; the text said Dropped 0)
#   bare_symbols: a capture the shim wrote alone is symbolized by `report` from the binary on disk
#               (storm.c's functions, not storm+0x...), with a note; then the binary is touched (a
#               note that it changed) and removed (a note that it is gone, module+offset frames)
#   no_cuda:    `record` of a program that loads the shim and makes no CUDA call: the message says so
#               and blames no static or setuid program
# Usage: report_faults.sh MODE GPUSPY LIBGPUSPY STORM WORKDIR (exit status 77: skipped, see the modes)
mode=$1 gpuspy=$2 lib=$3 storm=$4 work=$5
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"

case $mode in
cut_short)
    # storm pauses after its launches and waits on stdin; killed there, its End record never comes.
    killed() {  # NAME CMD...: runs CMD until it says "paused", then SIGKILLs it
        local name=$1
        shift
        mkfifo "$name.in"
        "$@" <"$name.in" >"$name.out" 2>"$name.err" &
        local pid=$!
        exec 7>"$name.in"
        hz_wait_for 60 grep -q paused "$name.out" || hz_fail "$name: never paused"
        sleep 1.5  # the shim's drain thread writes at least once a second
        kill -KILL $pid
        wait $pid
        echo $? >"$name.rc"
        exec 7>&-
    }
    killed base "$storm" 2 2000 pause
    killed shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cut.gspy" "$storm" 2 2000 pause
    hz_same . base shim
    "$gpuspy" report cut.gspy >report.txt 2>report.err
    pid=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' <("$gpuspy" dump cut.gspy 2>/dev/null) | head -1)
    tr -s '\n ' ' ' <report.txt | grep -q "1 process.s stream was cut short (no End record: .*pid $pid.*lower bounds" ||
        hz_fail "the text report does not say pid $pid was cut short: $(head -c 3000 report.txt)"
    grep -Eq "^ *$pid .* [0-9]+\? " report.txt || hz_fail "pid $pid's Dropped count is not marked unknown"
    "$gpuspy" report --format json cut.gspy >report.json 2>/dev/null
    grep -q '"ended": false' report.json || hz_fail "JSON does not say ended: false"
    ;;
bare_symbols)
    # (the TSan phase turns stacks off: nothing to symbolize there)
    [[ ${GPUSPY_STACK_DEPTH:-} == 0 ]] && { echo "skipped: GPUSPY_STACK_DEPTH=0"; exit 77; }
    cp "$storm" ./storm_copy
    hz_run . base ./storm_copy 2 200
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/bare.gspy" ./storm_copy 2 200
    hz_same . base shim
    "$gpuspy" report bare.gspy >on_disk.txt 2>&1 || hz_fail "report failed: $(tail -3 on_disk.txt)"
    grep -q "storm\.c:[0-9]" on_disk.txt || hz_fail "no call site names storm.c: $(grep -A3 'call sites\|Call sites' on_disk.txt | head)"
    grep -q "storm_copy+0x" on_disk.txt && hz_fail "frames still show as module+offset"
    tr -s '\n ' ' ' <on_disk.txt | grep -q "note: pid [0-9]*: the capture holds no symbols.*stacks were symbolized now, from the binaries on disk" ||
        hz_fail "no note that the stacks were symbolized from disk"
    grep -q "changed since\|gone since" on_disk.txt && hz_fail "a binary is said to have changed or gone: $(grep 'since' on_disk.txt)"
    sleep 0.01
    touch ./storm_copy
    # (the notes read from JSON: the text report wraps long paths)
    "$gpuspy" report --format json bare.gspy >changed.json 2>&1
    grep -q "changed since the process started (its frames may name the wrong code): $PWD/storm_copy" changed.json ||
        hz_fail "no note that storm_copy changed: $(grep -A3 notes changed.json)"
    rm ./storm_copy
    "$gpuspy" report --format json bare.gspy >gone.json 2>&1
    grep -q "gone since (frames shown as module+offset): $PWD/storm_copy" gone.json ||
        hz_fail "no note that storm_copy is gone: $(grep -A3 notes gone.json)"
    "$gpuspy" report bare.gspy >gone.txt 2>&1
    grep -q "storm_copy+0x" gone.txt || hz_fail "frames of the removed binary are not module+offset"
    ;;
no_cuda)
    # record puts the shim first in LD_PRELOAD, where a sanitizer runtime must come first.
    [[ -n ${GPUSPY_TEST_PRELOAD:-} ]] && { echo "skipped: a sanitizer runtime is preloaded"; exit 77; }
    # sh stays long enough for record to see the shim in it; neither sh nor sleep calls CUDA.
    hz_run . base /bin/sh -c 'sleep 0.8; echo done'
    hz_run . rec env GPUSPY_SHIM="$lib" "$gpuspy" record --sim -o nocuda.gspy -- /bin/sh -c 'sleep 0.8; echo done'
    hz_same . base rec
    grep -q "^gpuspy: no process connected to the collector: gpuspy was loaded into /bin/sh, but no process made a CUDA call" rec.err ||
        hz_fail "the message does not say the shim was loaded and no CUDA call came: $(grep '^gpuspy' rec.err)"
    grep -q "static\|setuid" rec.err && hz_fail "a static or setuid program is blamed: $(grep '^gpuspy' rec.err)"
    ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
exit $hz_failed
