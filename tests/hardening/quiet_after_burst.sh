#!/usr/bin/env bash
# tests/hardening/quiet_after_burst.sh: no thread is starved of queue space by other threads' bursts.
# quiet_after_burst.c's THREADS threads launch flat out while the collector is stopped (SIGSTOP), so
# that they fill their share of the shim's queue and drop; the collector then runs again, and a quiet
# thread that existed during the burst and a new one make QUIET spaced memsets each. Every one of those
# must be in the capture (each thread has a lane of its own: a burst elsewhere cannot take its space),
# the burst must have dropped (else the test proved nothing), delivered + dropped = made, and the app's
# exit status and stdout are those of a run without gpuspy.
# Usage: quiet_after_burst.sh GPUSPY LIBGPUSPY PROGRAM WORKDIR THREADS LAUNCHES QUIET [QUEUE_ITEMS]
# Environment: as collector_faults.sh.
gpuspy=$1 lib=$2 prog=$3 work=$4 threads=$5 launches=$6 quiet=$7 queue=${8:-1024}
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"

echo go | hz_run . base "$prog" "$threads" "$launches" "$quiet"

"$gpuspy" collect --socket "$PWD/collector.sock" -o "$PWD/collected.gspy" 2>collector.err &
collector=$!
hz_wait_for 60 test -S collector.sock || { kill -KILL $collector; hz_fail "the collector never listened"; exit 1; }
kill -STOP $collector

hz_start_paused LD_PRELOAD="$preload" GPUSPY_SOCKET="$PWD/collector.sock" GPUSPY_QUEUE_ITEMS=$queue \
    "$prog" "$threads" "$launches" "$quiet"
if ! hz_wait_for 240 grep -q '^paused' shim.out; then
    hz_fail "the app did not get through its burst while the collector was stopped"
    kill -CONT $collector
    kill -KILL $app $collector
    exit 1
fi
kill -CONT $collector
hz_release_paused
kill -INT $collector
wait $collector || hz_fail "the collector failed: $(cat collector.err)"

hz_expect_drops "$gpuspy" collected.gspy "$threads x $launches launches, collector stopped" "the burst"

# The quiet threads' calls, per thread (tid): each thread's memsets all delivered, by one thread each.
"$gpuspy" dump collected.gspy >collected.txt
for api in cuMemsetD8_v2 cuMemsetD16_v2; do
    # The early thread's first memset came before the burst.
    expected=$quiet
    [[ $api == cuMemsetD8_v2 ]] && expected=$((quiet + 1))
    per_tid=$(grep " Call #[0-9]* $api " collected.txt | sed -n 's/.* tid=\([0-9]*\) .*/\1/p' | sort | uniq -c)
    hz_note "$api calls delivered per thread (count tid): $(echo $per_tid)"
    [[ $(wc -l <<<"$per_tid") -eq 1 ]] || hz_fail "$api calls from more than one thread: $per_tid"
    read -r got _ <<<"$per_tid"
    [[ ${got:-0} -eq $expected ]] ||
        hz_fail "$((expected - ${got:-0})) of the $expected $api calls of a quiet thread were not delivered"
done
exit $hz_failed
