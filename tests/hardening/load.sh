#!/usr/bin/env bash
# tests/hardening/load.sh: 8 threads launching as fast as the simulated driver allows, streamed to a
# collector, at two run lengths (LAUNCHES and 4 x LAUNCHES per thread). Checks, at both lengths: the
# app's exit status and stdout are those of a run without gpuspy; every record the shim made was
# delivered or counted as dropped (delivered + dropped = made, from the shim's own counts in the
# capture). Across lengths: neither gpuspy's share of the app's peak memory nor the collector's peak
# grows with the run (at most LIMIT_MIB more for 4x the records: the collector writes records to the
# capture as they arrive and keeps only definitions).
# Usage: load.sh GPUSPY LIBGPUSPY STORM WORKDIR LAUNCHES [LIMIT_MIB]
# Environment: as collector_faults.sh.
gpuspy=$1 lib=$2 storm=$3 work=$4 launches=$5 limit_mib=${6:-16}
# A sanitizer's own memory (TSan's shadow and history of the instrumented shim) grows with the run:
# scripts/test.sh's TSan phase widens the limit with HZ_LOAD_LIMIT_MIB and keeps every other check.
limit_mib=${HZ_LOAD_LIMIT_MIB:-$limit_mib}
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"
threads=8

for scale in 1 4; do
    n=$((launches * scale))
    hz_run . base$scale hz_maxrss base$scale.rss "$storm" $threads $n
    "$gpuspy" collect --socket "$PWD/c$scale.sock" -o "$PWD/c$scale.gspy" 2>collector$scale.err &
    collector=$!
    hz_wait_for 60 test -S c$scale.sock || { hz_fail "the collector never listened"; exit 1; }
    hz_run . shim$scale hz_maxrss shim$scale.rss \
        env LD_PRELOAD="$preload" GPUSPY_SOCKET="$PWD/c$scale.sock" "$storm" $threads $n
    hz_same . base$scale shim$scale
    # The collector's peak: its own VmHWM, read before it exits.
    grep VmHWM /proc/$collector/status | awk '{print $2}' >collector$scale.rss
    kill -INT $collector
    wait $collector || hz_fail "the collector failed: $(cat collector$scale.err)"
    acc=$(hz_accounting "$gpuspy" c$scale.gspy) || hz_fail "records lost without being counted as dropped ($n launches per thread)"
    read -r _ made delivered dropped <<<"$acc"
    echo "$made $delivered $dropped" >acc$scale
    hz_note "$threads x $n launches: made $made, delivered $delivered, dropped $dropped;" \
        "peak RSS app $(cat base$scale.rss) KiB alone, $(cat shim$scale.rss) KiB with gpuspy; collector $(cat collector$scale.rss) KiB"
done

growth_app=$(( ($(cat shim4.rss) - $(cat shim1.rss)) - ($(cat base4.rss) - $(cat base1.rss)) ))
hz_note "gpuspy's share of the app's peak memory grew by $growth_app KiB for 4x the launches"
[[ $growth_app -le $((limit_mib * 1024)) ]] || hz_fail "the app's memory with gpuspy grows with the run: +$growth_app KiB"
read -r _ d1 _ <acc1
read -r _ d4 _ <acc4
growth_collector=$(( $(cat collector4.rss) - $(cat collector1.rss) ))
hz_note "the collector's peak memory grew by $growth_collector KiB for $((d4 - d1)) more records received"
[[ $growth_collector -le $((limit_mib * 1024)) ]] ||
    hz_fail "the collector's memory grows with the records it receives: +$growth_collector KiB for $((d4 - d1)) more"
exit $hz_failed
