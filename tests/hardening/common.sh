# tests/hardening/common.sh: what the hardening tests share (sourced): a failure tally, the comparison
# of a run with gpuspy against the same run without it, the record accounting of a capture, a peak-RSS
# probe, and bounded waits (a hang becomes a failure with a message, not a ctest timeout).
set -uo pipefail
hz_failed=0
hz_fail() { echo "FAIL: $*" >&2; hz_failed=1; }
hz_note() { echo "$*" >&2; }

# hz_same WORK A B: runs A and B (files WORK/A.rc, WORK/A.out, ...) ended with the same status and stdout.
hz_same() {
    local w=$1 a=$2 b=$3
    [[ $(cat "$w/$a.rc") == $(cat "$w/$b.rc") ]] ||
        hz_fail "exit status $(cat "$w/$a.rc") in the $a run, $(cat "$w/$b.rc") in the $b run"
    diff -u "$w/$a.out" "$w/$b.out" >&2 || hz_fail "stdout of the $b run differs from the $a run"
}

# hz_setup WORK LIBGPUSPY: every test's start: an empty WORK as the current directory, `preload` set to
# what LD_PRELOAD must hold (GPUSPY_TEST_PRELOAD, a sanitizer runtime, before the shim), and the
# simulated driver without modelled host cost and with 100 ns kernels, so the app runs flat out.
hz_setup() {
    rm -rf "$1"
    mkdir -p "$1"
    cd "$1" || exit 2
    preload="${GPUSPY_TEST_PRELOAD:+$GPUSPY_TEST_PRELOAD:}$2"
    export SIMCUDA_HOST_COST=0 SIMCUDA_KERNEL_DEFAULT_NS=100
}

# hz_run WORK NAME CMD...: runs CMD with stdout/stderr/status into WORK/NAME.{out,err,rc}.
hz_run() {
    local w=$1 n=$2
    shift 2
    "$@" >"$w/$n.out" 2>"$w/$n.err"
    echo $? >"$w/$n.rc"
}

# hz_gpuspy_lines FILE: how many lines gpuspy wrote into an app's stderr.
hz_gpuspy_lines() { grep -c '^gpuspy:' "$1"; }

# hz_wait_for SECONDS CMD...: polls CMD every 0.1 s; false when it never held.
hz_wait_for() {
    local limit=$(($1 * 10))
    shift
    for ((i = 0; i < limit; ++i)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# hz_maxrss OUT CMD...: runs CMD and writes its peak resident set (KiB) into OUT; returns CMD's status.
hz_maxrss() {
    local out=$1
    shift
    python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)' "$out" "$@"
}

# hz_accounting GPUSPY CAPTURE: per process, the records delivered (Call, Nvtx, ThreadStats, End: what
# the shim counts as made) plus those its End record says were dropped must equal the number it says it
# made. Prints "pid made delivered dropped" per process; false on any mismatch or a missing End.
hz_accounting() {
    local gpuspy=$1 cap=$2
    "$gpuspy" dump "$cap" | awk '
        $1 == "pid" && ($4 == "Call" || $4 == "Nvtx" || $4 == "ThreadStats") { got[$2]++ }
        $1 == "pid" && $4 == "End" {
            got[$2]++; ends[$2]++
            for (i = 5; i <= NF; ++i) {
                split($i, kv, "=")
                if (kv[1] == "made") made[$2] = kv[2]
                if (kv[1] == "dropped") dropped[$2] = kv[2]
            }
        }
        $1 == "pid" { seen[$2] = 1 }
        END {
            bad = 0
            for (p in seen) {
                if (ends[p] != 1) { printf "process %s: %d End records\n", p, ends[p] > "/dev/stderr"; bad = 1; continue }
                printf "%s %d %d %d\n", p, made[p], got[p], dropped[p]
                if (got[p] + dropped[p] != made[p]) {
                    printf "process %s: delivered %d + dropped %d != made %d\n", p, got[p], dropped[p], made[p] > "/dev/stderr"
                    bad = 1
                }
            }
            exit bad
        }'
}

# hz_expect_drops GPUSPY CAPTURE WHAT CAUSE: the capture's accounting holds (hz_accounting) and records
# were dropped; notes "WHAT: made M, delivered D, dropped X" (the first process). CAUSE names what was
# meant to fill the queue, for the failure.
hz_expect_drops() {
    local gpuspy=$1 cap=$2 what=$3 cause=$4 acc made delivered dropped
    acc=$(hz_accounting "$gpuspy" "$cap") || hz_fail "records lost without being counted as dropped"
    read -r _ made delivered dropped <<<"$acc"
    hz_note "$what: made $made, delivered $delivered, dropped $dropped"
    [[ ${dropped:-0} -gt 0 ]] || hz_fail "no records dropped: $cause did not fill the queue (raise LAUNCHES)"
}

# hz_start_paused VAR=VALUE... PROGRAM ARGS...: runs the app in the background (env's arguments) with
# its stdin behind the fifo `go`, held open on fd 3 (the app prints "paused" and waits for a line
# there: write one to `go` to let it go on); its stdout, stderr and status in shim.out, shim.err and
# shim.rc; sets `app` to the background job.
hz_start_paused() {
    mkfifo go
    (
        env "$@" <go >shim.out 2>shim.err
        echo $? >shim.rc
    ) &
    app=$!
    exec 3>go
}

# hz_release_paused: lets the app started by hz_start_paused go on, waits for it, and requires its exit
# status and stdout to be those of the run without gpuspy (base.*).
hz_release_paused() {
    echo go >&3
    exec 3>&-
    wait $app
    hz_same . base shim
}
