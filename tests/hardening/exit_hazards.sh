#!/usr/bin/env bash
# tests/hardening/exit_hazards.sh: a process that ends in the middle of something ends as it would
# without gpuspy (issue 30), with its capture complete or its losses counted. Modes (exit_hazards.c):
#   term_race: 20,000 launches, exit(0), then SIGTERM 20 ms later, while gpuspy's exit flush waits on
#       a collector that is stopped for 0.5 s: the signal lands inside the flush; status 0 as without
#       gpuspy (not 143), End in the capture, every launch in it or counted as dropped
#   term_race_handler: the same, the app's own SIGTERM handler installed (it would print a line and
#       _exit(3)): without gpuspy the process is gone before the signal comes and the handler never
#       runs; under gpuspy the signal comes during the flush and must not run it either (status 0)
#   handler_exit: a SIGTERM handler calls exit(0) from inside cuLaunchKernel, the driver's lock held
#       (SIMCUDA_SIGNAL): the exit does not wait out the flush limit on a drain thread blocked on that
#       lock; End written, every launch that returned in the capture
#   burst_exit: _exit(0) straight after 100,000 back-to-back launches: End written, every record
#       made before it delivered or counted as dropped
# Each against the same program without gpuspy (exit status, stdout).
# Usage: exit_hazards.sh MODE GPUSPY LIBGPUSPY WORKDIR PROGRAM
mode=$1 gpuspy=$2 lib=$3 work=$4 prog=$5
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"

launches() { "$gpuspy" dump "$1" | awk '$1 == "pid" && $4 == "Call" && $6 ~ /^cuLaunchKernel/' | wc -l; }

# timed NAME CMD...: hz_run, and the run's wall time in seconds into NAME.secs.
timed() {
    local n=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    hz_run . "$n" "$@"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$n.secs"
}

# within BASE SHIM SLACK: the run with gpuspy took at most SLACK seconds longer than BASE (loose: a
# loaded machine stretches both).
within() {
    # A sanitizer runtime (GPUSPY_TEST_PRELOAD) slows each hooked call 5-10x: the bound is the plain build's.
    [[ -n ${GPUSPY_TEST_PRELOAD:-} ]] && return
    awk -v b="$1" -v s="$2" -v k="$3" 'BEGIN { exit !(s <= b + k) }' ||
        hz_fail "the run took $2 s with gpuspy, $1 s without: more than $3 s added"
}

# term_race [handler]: 20,000 launches, exit(0), SIGTERM 20 ms later, while the exit flush waits on a
# stopped collector; the same against the run without gpuspy.
term_race() {
    timed base "$prog" term_race 20000 20000 "$@"
    [[ $(cat base.rc) -eq 0 ]] || hz_fail "without gpuspy the exit took over 20 ms (status $(cat base.rc)): the machine is too slow for this test"
    "$gpuspy" collect --socket "$PWD/collector.sock" -o "$PWD/collected.gspy" 2>collector.err &
    collector=$!
    hz_wait_for 60 test -S collector.sock || { kill -KILL $collector; hz_fail "the collector never listened"; exit 1; }
    kill -STOP $collector
    timed shim env LD_PRELOAD="$preload" GPUSPY_SOCKET="$PWD/collector.sock" "$prog" term_race 20000 20000 "$@" &
    app=$!
    hz_wait_for 60 test -s shim.out || hz_fail "the app never got to its exit"
    sleep 0.5
    kill -CONT $collector
    wait $app
    kill -INT $collector
    wait $collector || hz_fail "the collector failed: $(cat collector.err)"
    hz_same . base shim
    # Past the collector's 0.5 s stop, the flush's own limit (2 s) bounds the exit; the signal adds no wait.
    hz_note "run took $(cat base.secs) s without gpuspy, $(cat shim.secs) s with it (the collector stopped for 0.5 s)"
    within "$(cat base.secs)" "$(cat shim.secs)" 3.0
    # More than the socket's buffer holds: the flush is still waiting on the collector when the signal comes.
    acc=$(hz_accounting "$gpuspy" collected.gspy) || hz_fail "records lost without being counted, or no End"
    read -r _ made delivered dropped <<<"$acc"
    n=$(launches collected.gspy)
    hz_note "made $made, delivered $delivered, dropped $dropped; $n launches in the capture"
    [[ $((n + dropped)) -ge 20000 ]] || hz_fail "the capture holds $n launches and $dropped drops for 20000 launches"
}

case $mode in
term_race)
    term_race
    ;;
term_race_handler)
    term_race handler
    ;;
handler_exit)
    export SIMCUDA_SIGNAL=cuLaunchKernel@3000=15
    timed base "$prog" handler_exit 100000
    timed shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" "$prog" handler_exit 100000
    hz_same . base shim
    hz_note "exit took $(cat base.secs) s without gpuspy, $(cat shim.secs) s with it"
    # The flush limit at exit is 2 s: a drain thread blocked on the driver's lock waits it out.
    awk -v t="$(cat shim.secs)" 'BEGIN { exit !(t < 1.0) }' ||
        hz_fail "the run took $(cat shim.secs) s: the exit waited on a drain thread blocked in the driver"
    hz_accounting "$gpuspy" cap.gspy >/dev/null || hz_fail "records lost without being counted, or no End"
    n=$(launches cap.gspy)
    [[ $n -eq 2999 ]] || hz_fail "the capture holds $n launches, the app returned from 2999"
    ;;
burst_exit)
    timed base "$prog" burst_exit 100000
    # The capture file the shim writes alone, then the collector's socket (gpuspy record; not in a
    # sanitizer build: record cannot preload the sanitizer runtime first).
    timed shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/file.gspy" "$prog" burst_exit 100000
    hz_same . base shim
    # _exit's flush limit (1 s) bounds what gpuspy adds to the end, beside its cost per launch.
    hz_note "run took $(cat base.secs) s without gpuspy, $(cat shim.secs) s with it"
    within "$(awk -v b="$(cat base.secs)" 'BEGIN { print 3 * b }')" "$(cat shim.secs)" 2.0
    outs=(file)
    if [[ -z ${GPUSPY_TEST_PRELOAD:-} ]]; then
        hz_run . record "$gpuspy" record --sim -o socket.gspy -- "$prog" burst_exit 100000
        [[ $(cat record.rc) == $(cat base.rc) ]] || hz_fail "exit status $(cat record.rc) under gpuspy record, $(cat base.rc) without"
        grep -qxF "$(cat base.out)" record.out || hz_fail "the app's stdout is not in record's: $(cat record.out)"
        outs+=(socket)
    fi
    for out in "${outs[@]}"; do
        acc=$(hz_accounting "$gpuspy" "$out.gspy") || hz_fail "$out: records lost without being counted, or no End"
        read -r _ made delivered dropped <<<"$acc"
        hz_note "$out: made $made, delivered $delivered, dropped $dropped, launches $(launches "$out.gspy")"
    done
    ;;
*)
    echo "exit_hazards.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
exit $hz_failed
