#!/usr/bin/env bash
# tests/hardening/collector_faults.sh: the collector fails while the app runs (storm.c with `pause`).
#   stall: the collector is stopped (SIGSTOP) from before the app starts until the app has launched
#          everything; the app must get there all the same (gpuspy never blocks it): the bounded queue
#          drops, counts, and the report says so once the collector runs again.
#   kill:  the collector is killed (SIGKILL) while the app pauses; the app goes on unaffected, what the
#          collector wrote is readable, and the shim writes the rest to GPUSPY_OUTPUT, nothing of it lost.
# Both compare the app's exit status and stdout with a run without gpuspy.
# Usage: collector_faults.sh stall|kill GPUSPY LIBGPUSPY STORM WORKDIR THREADS LAUNCHES [QUEUE_ITEMS]
# Environment: LD_LIBRARY_PATH puts the simulated libcuda.so.1 first; GPUSPY_TEST_PRELOAD (optional) is
# preloaded before libgpuspy.so (a sanitizer runtime).
mode=$1 gpuspy=$2 lib=$3 storm=$4 work=$5 threads=$6 launches=$7 queue=${8:-65536}
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"

echo go | hz_run . base "$storm" "$threads" "$launches" pause

"$gpuspy" collect --socket "$PWD/collector.sock" -o "$PWD/collected.gspy" 2>collector.err &
collector=$!
hz_wait_for 60 test -S collector.sock || { kill -KILL $collector; hz_fail "the collector never listened"; exit 1; }
[[ $mode == stall ]] && kill -STOP $collector

hz_start_paused LD_PRELOAD="$preload" GPUSPY_SOCKET="$PWD/collector.sock" GPUSPY_OUTPUT="$PWD/fallback.gspy" \
    GPUSPY_QUEUE_ITEMS=$queue "$storm" "$threads" "$launches" pause
# The app must reach its pause with the collector stopped or dead: gpuspy must not make it wait.
if ! hz_wait_for 240 grep -q '^paused' shim.out; then
    hz_fail "the app did not get through its launches while the collector was ${mode/stall/stopped}"
    kill -CONT $collector
    kill -KILL $app $collector
    exit 1
fi
if [[ $mode == stall ]]; then
    kill -CONT $collector
else
    # Everything the app made before the pause reached the collector's file (it flushes each second).
    hz_wait_for 60 bash -c "'$gpuspy' dump '$PWD/collected.gspy' 2>/dev/null | grep -q 'cuStreamSynchronize'" ||
        hz_fail "the collector never wrote what it received"
    { kill -KILL $collector && wait $collector; } 2>/dev/null
fi
hz_release_paused

if [[ $mode == stall ]]; then
    kill -INT $collector
    wait $collector || hz_fail "the collector failed after the stall: $(cat collector.err)"
    hz_expect_drops "$gpuspy" collected.gspy "stalled collector" "the stall"
    "$gpuspy" report collected.gspy >report.txt || hz_fail "gpuspy report failed on the capture"
    grep -q 'dropped-records' report.txt || hz_fail "the report does not mention the dropped records"
    [[ ! -e fallback.gspy ]] || hz_fail "a stalled collector made the shim fall back to a file"
else
    [[ $(hz_gpuspy_lines shim.err) -eq 1 ]] && grep -q '^gpuspy: lost the collector' shim.err ||
        hz_fail "expected one line 'gpuspy: lost the collector' on stderr, got: $(grep '^gpuspy:' shim.err)"
    # What the collector received before it died: readable, every launch of the first phase in it.
    "$gpuspy" dump collected.gspy >collected.txt 2>collected.err
    grep -q 'no End chunk' collected.err || hz_fail "reading the killed collector's file: $(cat collected.err)"
    got=$(grep -c ' Call #[0-9]* cuLaunchKernel ' collected.txt)
    [[ $got -eq $((threads * launches)) ]] || hz_fail "$got launches in the killed collector's file, expected $((threads * launches))"
    # The rest, in the fallback file: complete (End), every memset made after the pause in it, and
    # every record the shim made is in one of the two files or counted as dropped.
    read -r _ made delivered dropped <<<"$(hz_accounting "$gpuspy" fallback.gspy 2>/dev/null)"
    before=$(grep -cE '^pid [0-9]+ @[0-9]+ (Call|Nvtx|ThreadStats) ' collected.txt)
    hz_note "killed collector: made ${made:-?}: ${before} delivered to the collector, ${delivered:-?} to the file, ${dropped:-?} dropped"
    [[ -n ${made:-} && $((before + delivered + dropped)) -eq $made ]] ||
        hz_fail "records lost without being counted as dropped"
    memsets=$("$gpuspy" dump fallback.gspy | grep -c ' Call #[0-9]* cuMemsetD8_v2 ')
    expected=$(sed -n 's/^\([0-9]*\) memsets after the pause.*/\1/p' base.out)
    [[ $memsets -eq $expected ]] || hz_fail "$memsets memsets in the fallback file, the app made $expected after the collector died"
fi
exit $hz_failed
