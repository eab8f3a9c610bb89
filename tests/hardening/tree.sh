#!/usr/bin/env bash
# tests/hardening/tree.sh: process trees that `gpuspy record` must follow or name (issue 30, tree.c). Each
# mode runs its command with and without gpuspy record, requires the same exit status and the app's
# stdout in record's, then checks the capture against the programs' own counts:
#   daemon_chain: a double-forked daemon that reaches its CUDA image through 4 execs (two through
#       /bin/sh): record waits for it, its 200 launches are in record's capture, no capture of its own
#   static_chain: the same behind a statically linked supervisor (supervise.c, HZ_SUPERVISE)
#   nopreload: 2 children exec'd without LD_PRELOAD (150 launches each): the report names them (command
#       line, the CUDA driver loaded) in text and JSON, and says their calls are not in the capture
#   nosocket: 2 children that kept LD_PRELOAD but dropped GPUSPY_SOCKET, each writing a capture of its
#       own: record names each file, merges it, and the capture holds all 450 launches, 3 processes
#   close_range: close_range(3, ~0) 5 times in a launch loop of 1000: one process in the report, not
#       cut short, every launch; stderr says the app closed gpuspy's descriptor (not 'took over')
# Usage: tree.sh MODE GPUSPY LIBGPUSPY WORKDIR PROGRAM
mode=$1 gpuspy=$2 lib=$3 work=$4 prog=$5
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"
if [[ -n ${GPUSPY_TEST_PRELOAD:-} ]]; then
    hz_note "skipped: gpuspy record cannot preload the sanitizer runtime first"
    exit 0
fi

# launches CAPTURE [PID]: the cuLaunchKernel calls recorded in it (of process PID).
launches() {
    "$gpuspy" dump "$1" | awk -v pid="${2:-}" '$1 == "pid" && (pid == "" || $2 == pid) && $4 == "Call" && $6 ~ /^cuLaunchKernel/' | wc -l
}

# complete CAPTURE LAUNCHES: an End record per process, delivered + dropped = made, every launch recorded.
complete() {
    [[ -s $1 ]] || { hz_fail "no capture at $1"; return; }
    hz_accounting "$gpuspy" "$1" >/dev/null || hz_fail "$1: records lost without being counted, or no End"
    local n
    n=$(launches "$1")
    [[ $n -eq $2 ]] || hz_fail "$1 holds $n launches, expected $2"
}

# recorded NAME CMD...: CMD without gpuspy (base.*) and under gpuspy record (NAME.*, capture NAME.gspy):
# the same exit status, and the app's stdout in record's.
recorded() {
    local name=$1
    shift
    hz_run . base "$@"
    hz_run . "$name" "$gpuspy" record --sim -o "$name.gspy" -- "$@"
    [[ $(cat "$name.rc") == $(cat base.rc) ]] || hz_fail "exit status $(cat "$name.rc") under gpuspy record, $(cat base.rc) without"
    local line
    while IFS= read -r line; do
        grep -qxF "$line" "$name.out" || hz_fail "the app's line '$line' is not in record's stdout"
    done <base.out
}

case $mode in
daemon_chain | static_chain)
    if [[ $mode == daemon_chain ]]; then
        cmd=("$prog" daemon_chain 300 4)
    else
        cmd=("$HZ_SUPERVISE" 300 "$prog" hop 4)
    fi
    hz_run . base "${cmd[@]}" 200 "$PWD/base.done"
    hz_wait_for 60 test -s base.done || hz_fail "the daemon without gpuspy did not finish"
    hz_run . shim "$gpuspy" record --sim -o shim.gspy -- "${cmd[@]}" 200 "$PWD/shim.done"
    [[ $(cat shim.rc) == $(cat base.rc) ]] || hz_fail "exit status $(cat shim.rc) under gpuspy record, $(cat base.rc) without"
    grep -qxF "$(cat base.out)" shim.out || hz_fail "the app's stdout is not in record's: $(head -3 shim.out)"
    # record waited for the daemon: its line was written before record returned.
    [[ -s shim.done ]] || hz_fail "record returned before the daemon finished: $(grep '^gpuspy' shim.err)"
    diff base.done shim.done >&2 || hz_fail "the daemon's line differs under gpuspy"
    complete shim.gspy 200
    grep -q "no process connected" shim.err && hz_fail "record ended before the daemon connected: $(grep '^gpuspy' shim.err)"
    ls /gpuspy-*.gspy 2>/dev/null | while read -r f; do
        [[ $f -nt base.done ]] && hz_fail "the daemon wrote a capture of its own: $f"
    done
    ;;
nopreload)
    recorded shim "$prog" children nopreload 2 150
    complete shim.gspy 150
    grep -q '^work: 150 launches, 0 failed$' shim.out || hz_fail "the children did not run"
    [[ $(grep -c "ran without gpuspy (LD_PRELOAD was not kept) and loaded the CUDA driver" shim.err) -eq 2 ]] ||
        hz_fail "record's stderr does not name the 2 children: $(grep '^gpuspy' shim.err)"
    # The report names both children, their command line and that they loaded the CUDA driver (its
    # lines joined: the text is wrapped).
    n=$(tr -s '\n ' '  ' <shim.out | grep -o "pid [0-9]* ran without gpuspy (LD_PRELOAD not kept): $prog work 150 300; it loaded the CUDA driver" | wc -l)
    [[ $n -eq 2 ]] || hz_fail "the report names $n of the 2 children that ran without gpuspy: $(grep -n 'without gpuspy' shim.out)"
    "$gpuspy" report --format json shim.gspy >report.json || hz_fail "report --format json failed"
    python3 - "$prog" <<'EOF' || hz_fail "the JSON report does not list the children (outside)"
import json, sys
r = json.load(open("report.json"))
out = [p for p in r.get("outside", []) if p["command"] == sys.argv[1] + " work 150 300"]
assert len(out) == 2, r.get("outside")
assert all(p["why"] == "no_preload" and p["cuda_driver"] == "loaded" for p in out), out
EOF
    ;;
nosocket)
    recorded shim "$prog" children nosocket 2 150
    caps=(gpuspy-*.gspy)
    [[ ${#caps[@]} -eq 2 && -s ${caps[0]} ]] || hz_fail "expected the 2 children's own captures beside the app: ${caps[*]}"
    for c in "${caps[@]}"; do
        [[ $(launches "$c") -eq 150 ]] || hz_fail "$c holds $(launches "$c") launches, expected 150"
        grep -qF "$PWD/$c" shim.err || hz_fail "record does not say where a child wrote $c: $(grep '^gpuspy' shim.err)"
        grep -qF "$PWD/$c" shim.out || hz_fail "the report does not name $c"
    done
    # Merged: the capture holds the parent's and both children's launches, each child as a process.
    complete shim.gspy 450
    grep -q "^gpuspy report: 3 processes" shim.out || hz_fail "the report does not show 3 processes: $(grep '^gpuspy report' shim.out)"
    ;;
close_range)
    recorded shim "$prog" close_range 1000 5
    complete shim.gspy 1000
    grep -q "^gpuspy report: 1 process," shim.out || hz_fail "the report does not show one process: $(grep '^gpuspy report' shim.out)"
    grep -q "cut short\|lower bound" shim.out && hz_fail "the report calls the process cut short: $(grep -n 'cut short\|lower bound' shim.out)"
    streams=$("$gpuspy" dump shim.gspy | awk '$1 == "pid" && $4 == "Process"' | wc -l)
    hz_note "$streams stream(s) of the process in the capture"
    grep -q "took over" shim.err && hz_fail "stderr says the app took over a descriptor it closed: $(grep '^gpuspy' shim.err)"
    [[ $streams -gt 1 ]] && ! grep -q "^gpuspy: the app closed descriptor" shim.err &&
        hz_fail "stderr does not say the app closed gpuspy's descriptor: $(grep '^gpuspy:' shim.err)"
    ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
exit $hz_failed
