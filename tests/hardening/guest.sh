#!/usr/bin/env bash
# tests/hardening/guest.sh: gpuspy as a guest in a server-like process (issue 15). Each mode runs its
# program with and without gpuspy, requires the same exit status and stdout, then checks the property:
#   fd_low, fd_all, fd_closefrom: the app takes descriptor numbers over after CUDA init (fd_takeover.c):
#       its data file holds only its own lines, and every launch is in the capture
#   unwind_pipe: libunwind's validation pipe never touches the app's socket (unwind_pipe.c checks)
#   sig_guard: 10 SIGSEGVs handled by the app with a collector that does not read: no waiting
#   sig_default: HUP PIPE USR1 USR2 ALRM QUIT TERM INT with the default action: same wait status, the
#       capture complete (End included)
#   fd_all_record, fd_closefrom_record: fd_all, fd_closefrom with the collector's socket (gpuspy record):
#       the reconnected stream is one process in the report, not cut short
#   disabled: GPUSPY_DISABLE=1 holds no descriptor (as many open as without gpuspy), writes nothing
#   spill_compact: the capture file the shim writes alone is compressed (<= 24 bytes a launch)
#   spill_cap, spill_cap_socket: GPUSPY_MAX_BYTES bounds a capture file, drops counted, said once
#   daemon, clearenv, chdir, gone: settings and the output path fixed when the library loaded
#   fd_low_limit, fd_low_limit_record: RLIMIT_NOFILE lowered to 16 before the first CUDA call (low_limit.c):
#       the app opens as many descriptors as without gpuspy (the collector's socket, with record, and
#       libunwind's pipe were made at load, above the limit), and every launch is in the capture
#   fd_limit_1024: started with a limit of 4096, the app lowers it to 1024 (a server that uses select):
#       as many descriptors as without gpuspy (the shim's are at the top of the 4096, not under 1024)
#   fd_limit_same: started with a soft limit of 1024 under a hard one of 4096, the app sets 1024 and
#       opens all it can: as many as without gpuspy (the shim's were placed at 1024 and up)
#   prefork_record, prefork_low_limit_record: a master that never calls CUDA forks 3 workers at once
#       (prefork.c) under gpuspy record; each worker is in the capture as a process of its own with all
#       its launches and its End (the workers inherited the master's unused spare socket: one connection
#       for three). _low_limit: each worker lowers RLIMIT_NOFILE to 16 before its first call and opens
#       as many descriptors as without gpuspy
#   prefork_low_limit_file: the same, each worker writing its own capture file (GPUSPY_OUTPUT): each is
#       complete, and each worker opens as many descriptors as without gpuspy
#   daemon_static_supervisor: gpuspy record of a statically linked supervisor (supervise.c, HZ_SUPERVISE)
#       that double-forks a worker which execs 1 s later: record waits for it (the settings in its
#       environment), and the worker's 200 launches are in record's capture, none in a file of its own
#   setuid: a server that drops privileges before its first CUDA call, refused by the collector's
#       private socket: stderr names that cause (not a bare "no collector") (root only: else 77)
# Usage: guest.sh MODE GPUSPY LIBGPUSPY WORKDIR PROGRAM
mode=$1 gpuspy=$2 lib=$3 work=$4 prog=$5
source "$(dirname "$0")/common.sh"
hz_setup "$work" "$lib"

# launches CAPTURE: the cuLaunchKernel calls recorded in it.
launches() { "$gpuspy" dump "$1" | awk '$1 == "pid" && $4 == "Call" && $6 ~ /^cuLaunchKernel/' | wc -l; }

# complete CAPTURE LAUNCHES: an End record, delivered + dropped = made, and every launch recorded.
complete() {
    [[ -s $1 ]] || { hz_fail "no capture at $1"; return; }
    hz_accounting "$gpuspy" "$1" >/dev/null || hz_fail "$1: records lost without being counted, or no End"
    local n
    n=$(launches "$1")
    [[ $n -eq $2 ]] || hz_fail "$1 holds $n launches, expected $2"
}

case $mode in
fd_low | fd_all | fd_closefrom)
    how=${mode#fd_}
    hz_run . base "$prog" "$how" "$PWD/base.data"
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" HZ_QUIET_FILE="$PWD/cap.gspy" "$prog" "$how" "$PWD/shim.data"
    hz_same . base shim
    took=$(sed -n 's/^took \([0-9]*\) numbers$/\1/p' shim.err)
    [[ $(wc -l <shim.data) -eq ${took:-x} ]] || hz_fail "the data file holds $(wc -l <shim.data) lines, the app wrote $took"
    grep -qvx "the app's line through a taken number" shim.data && hz_fail "gpuspy's bytes in the app's data file"
    [[ $(stat -c %s shim.data) -eq $((took * 38)) ]] || hz_fail "the data file has $(stat -c %s shim.data) bytes, the app wrote $((took * 38))"
    complete cap.gspy 1000
    ;;
disabled)
    # GPUSPY_DISABLE=1: gpuspy holds no descriptor at all (fd_takeover's `all` counts the open ones).
    hz_run . base "$prog" all "$PWD/base.data"
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_DISABLE=1 "$prog" all "$PWD/shim.data"
    hz_same . base shim
    [[ $(grep '^took' shim.err) == $(grep '^took' base.err) ]] ||
        hz_fail "descriptors open with gpuspy disabled: $(grep '^took' shim.err), without gpuspy: $(grep '^took' base.err)"
    ls ./*.gspy 2>/dev/null && hz_fail "a capture was written with GPUSPY_DISABLE=1"
    ;;
fd_all_record | fd_closefrom_record)
    # The same through the collector's socket (gpuspy record): the socket's number taken over (or closed:
    # closefrom), gpuspy connects again (a second stream of the same process, joined to the first when
    # the capture is read: one process in the report, not cut short) and nothing is lost or sent to the
    # app's file.
    # Not in a sanitizer build: record preloads the instrumented shim without the sanitizer runtime.
    if [[ -n ${GPUSPY_TEST_PRELOAD:-} ]]; then
        hz_note "skipped: gpuspy record cannot preload the sanitizer runtime first"
        exit 0
    fi
    how=${mode#fd_}
    how=${how%_record}
    hz_run . base "$prog" "$how" "$PWD/base.data"
    hz_run . shim env HZ_QUIET_FILE="$PWD/cap.gspy" "$gpuspy" record --sim -o cap.gspy -- "$prog" "$how" "$PWD/shim.data"
    [[ $(cat shim.rc) == $(cat base.rc) ]] || hz_fail "exit status $(cat shim.rc) under gpuspy record, $(cat base.rc) without"
    grep -qxF "$(cat base.out)" shim.out || hz_fail "the app's stdout is not in record's: $(cat shim.out)"
    took=$(sed -n 's/^took \([0-9]*\) numbers$/\1/p' shim.err)
    [[ $(stat -c %s shim.data) -eq $((took * 38)) ]] || hz_fail "the data file has $(stat -c %s shim.data) bytes, the app wrote $((took * 38))"
    complete cap.gspy 1000
    grep -q "^gpuspy report: 1 process," shim.out || hz_fail "the report does not show one process: $(grep '^gpuspy report' shim.out)"
    grep -q "cut short\|lower bound" shim.out && hz_fail "the report calls the process cut short: $(grep -n 'cut short\|lower bound' shim.out)"
    # Closed while gpuspy was connected (not when its drain thread connected only after the closefrom, on a
    # slow start): a second stream, and stderr says the app closed the descriptor.
    streams=$("$gpuspy" dump cap.gspy | awk '$1 == "pid" && $4 == "Process"' | wc -l)
    hz_note "$streams stream(s) of the process in the capture"
    if [[ $how == closefrom && $streams -gt 1 ]]; then
        grep -q "^gpuspy: the app closed descriptor" shim.err || hz_fail "stderr does not say the app closed gpuspy's descriptor: $(grep '^gpuspy:' shim.err)"
    fi
    ;;
fd_low_limit | fd_low_limit_record | fd_limit_1024 | fd_limit_same)
    limit=16 start=()
    case $mode in
    fd_limit_1024) limit=1024 start=(prlimit --nofile=4096:4096) ;;
    fd_limit_same) limit=1024 start=(prlimit --nofile=1024:4096) ;;
    esac
    hz_run . base "${start[@]}" "$prog" $limit
    if [[ $mode != fd_low_limit_record ]]; then
        hz_run . shim "${start[@]}" env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" "$prog" $limit
        hz_same . base shim
    else
        if [[ -n ${GPUSPY_TEST_PRELOAD:-} ]]; then
            hz_note "skipped: gpuspy record cannot preload the sanitizer runtime first"
            exit 0
        fi
        hz_run . shim "$gpuspy" record --sim -o cap.gspy -- "$prog" 16
        [[ $(cat shim.rc) == $(cat base.rc) ]] || hz_fail "exit status $(cat shim.rc) under gpuspy record, $(cat base.rc) without"
        grep -qxF "$(cat base.out)" shim.out || hz_fail "the app's stdout is not in record's: $(cat shim.out) (without gpuspy: $(cat base.out))"
    fi
    complete cap.gspy 400
    ;;
prefork_record | prefork_low_limit_record)
    limit=()
    [[ $mode == prefork_low_limit_record ]] && limit=(16)
    hz_run . base "$prog" 3 500 "${limit[@]}"
    if [[ -n ${GPUSPY_TEST_PRELOAD:-} ]]; then
        hz_note "skipped: gpuspy record cannot preload the sanitizer runtime first"
        exit 0
    fi
    hz_run . shim "$gpuspy" record --sim -o cap.gspy -- "$prog" 3 500 "${limit[@]}"
    [[ $(cat shim.rc) == $(cat base.rc) ]] || hz_fail "exit status $(cat shim.rc) under gpuspy record, $(cat base.rc) without"
    while read -r line; do
        grep -qxF "$line" shim.out || hz_fail "the app's line '$line' is not in record's stdout: $(cat shim.out)"
    done <base.out
    complete cap.gspy 1500
    per=$("$gpuspy" dump cap.gspy | awk '$1 == "pid" && $4 == "Call" && $6 ~ /^cuLaunchKernel/ { n[$2]++ }
                                         END { for (p in n) print n[p] }' | sort | tr '\n' ' ')
    [[ $per == "500 500 500 " ]] || hz_fail "launches per process in the capture: $per (3 workers of 500 each)"
    ls gpuspy-*.gspy cap.gspy.* 2>/dev/null && hz_fail "a worker wrote a capture of its own"
    ;;
prefork_low_limit_file)
    if [[ ${GPUSPY_TEST_PRELOAD:-} == *tsan* ]]; then
        # The simulated driver's fork handlers start a child from fresh locks, which ThreadSanitizer
        # takes for locks still held: every worker exits 66, gpuspy or not.
        hz_note "skipped under ThreadSanitizer: the simulated driver's fork handlers"
        exit 0
    fi
    hz_run . base "$prog" 3 500 16
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" "$prog" 3 500 16
    hz_same . base shim
    caps=(cap.gspy*)
    [[ ${#caps[@]} -eq 3 ]] || hz_fail "${#caps[@]} capture files for 3 workers: ${caps[*]}"
    for cap in "${caps[@]}"; do complete "$cap" 500; done
    ;;
daemon_static_supervisor)
    if [[ -n ${GPUSPY_TEST_PRELOAD:-} ]]; then
        hz_note "skipped: gpuspy record cannot preload the sanitizer runtime first"
        exit 0
    fi
    cmd=("$HZ_SUPERVISE" 1000 "$prog" burst_exit 200)
    hz_run . base "${cmd[@]}"
    hz_run . shim env HZ_QUIET_FILE="$PWD/cap.gspy" "$gpuspy" record --sim -o cap.gspy -- "${cmd[@]}"
    [[ $(cat shim.rc) == $(cat base.rc) ]] || hz_fail "exit status $(cat shim.rc) under gpuspy record, $(cat base.rc) without"
    grep -qxF "$(cat base.out)" shim.out || hz_fail "the app's stdout is not in record's: $(cat shim.out)"
    complete cap.gspy 200
    grep -q "no process connected" shim.err && hz_fail "record ended before the daemon connected: $(grep '^gpuspy:' shim.err)"
    ;;
spill_compact)
    # No collector: the capture file is compressed like the collector's, at most 24 bytes a call.
    hz_run . base "$prog" 2 20000
    # Lanes that hold every record a thread makes: on a loaded machine the drain thread may wait for a
    # CPU, and a counted drop would make this a test of load, not of the file's size.
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" GPUSPY_QUEUE_ITEMS=65536 "$prog" 2 20000
    hz_same . base shim
    complete cap.gspy 40000
    size=$(stat -c %s cap.gspy)
    hz_note "capture: $size bytes for 40000 launches"
    [[ $size -le $((40000 * 24)) ]] || hz_fail "the capture takes $((size / 40000)) bytes a launch, more than 24"
    ;;
unwind_pipe)
    hz_run . base "$prog"
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" "$prog"
    hz_same . base shim
    [[ $(cat shim.rc) -eq 0 ]] || hz_fail "the app saw its socket's bytes taken or added: $(cat shim.out)"
    complete cap.gspy 200
    ;;
sig_guard)
    # A collector that accepts and never reads: its socket fills, the drain thread cannot write.
    python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8)
held = []
while True: held.append(s.accept()[0])' "$PWD/stalled.sock" &
    listener=$!
    hz_wait_for 30 test -S stalled.sock || hz_fail "the stalled collector did not start"
    hz_run . base "$prog" 20000 10
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_SOCKET="$PWD/stalled.sock" "$prog" 20000 10
    kill "$listener"
    hz_same . base shim
    took=$(sed -n 's/^faults took \([0-9.]*\) s$/\1/p' shim.err)
    hz_note "10 faults took ${took}s with a stalled collector ($(sed -n 's/^faults took //p' base.err) without gpuspy)"
    # Each fault used to wait for the drain thread, 0.5 s: 5 s for ten. Half of that bounds a machine
    # however loaded; ten handlers that run at once take well under a millisecond.
    awk -v t="${took:-99}" 'BEGIN { exit !(t < 2.5) }' || hz_fail "10 faults took ${took}s: the app's handler waited for gpuspy"
    ;;
sig_default)
    ulimit -c 0
    for sig in HUP PIPE USR1 USR2 ALRM QUIT TERM INT; do
        num=$(kill -l "$sig")
        hz_run . "base_$sig" "$prog" "$num" 200
        hz_run . "shim_$sig" env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/$sig.gspy" "$prog" "$num" 200
        hz_same . "base_$sig" "shim_$sig"
        [[ $(cat "shim_$sig.rc") -eq $((128 + num)) ]] || hz_fail "SIG$sig: exit status $(cat "shim_$sig.rc")"
        complete "$sig.gspy" 200
    done
    ;;
spill_cap | spill_cap_socket)
    env=(GPUSPY_OUTPUT="$PWD/cap.gspy" GPUSPY_MAX_BYTES=256K)
    [[ $mode == spill_cap_socket ]] && env+=(GPUSPY_SOCKET="$PWD/nobody.sock")
    hz_run . base "$prog" 4 20000
    hz_run . shim env LD_PRELOAD="$preload" "${env[@]}" "$prog" 4 20000
    hz_same . base shim
    size=$(stat -c %s cap.gspy)
    hz_note "capture: $size bytes for a cap of 262144"
    [[ $size -le $((262144 + 65536)) ]] || hz_fail "the capture grew to $size bytes past GPUSPY_MAX_BYTES=256K"
    hz_expect_drops "$gpuspy" cap.gspy "capped capture" "80000 launches"
    [[ $(grep -c '^gpuspy: the capture reached GPUSPY_MAX_BYTES (262144 bytes)' shim.err) -eq 1 ]] ||
        hz_fail "the cap was not said exactly once: $(grep '^gpuspy:' shim.err)"
    ;;
daemon)
    # daemon(0, 0): chdir to /, stdio to /dev/null; the capture goes where the process started.
    hz_run . base "$prog" daemon "$PWD/base.done"
    hz_run . shim env LD_PRELOAD="$preload" "$prog" daemon "$PWD/shim.done"
    hz_same . base shim
    hz_wait_for 60 test -s shim.done || hz_fail "the daemon did not finish"
    hz_wait_for 60 test -s base.done || hz_fail "the daemon without gpuspy did not finish"
    caps=(gpuspy-*.gspy)
    [[ ${#caps[@]} -eq 1 && -s ${caps[0]} ]] || hz_fail "no capture in the directory the daemon started in: ${caps[*]}"
    complete "${caps[0]}" 300
    ;;
clearenv)
    hz_run . base "$prog" clearenv "$PWD/base.done"
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT="$PWD/cap.gspy" "$prog" clearenv "$PWD/shim.done"
    hz_same . base shim
    complete cap.gspy 300
    ;;
chdir)
    mkdir sub
    hz_run . base "$prog" chdir "$PWD/base.done" "$PWD/sub"
    hz_run . shim env LD_PRELOAD="$preload" GPUSPY_OUTPUT=rel.gspy "$prog" chdir "$PWD/shim.done" "$PWD/sub"
    hz_same . base shim
    [[ -e sub/rel.gspy ]] && hz_fail "the relative GPUSPY_OUTPUT was taken from the directory at the first call"
    complete rel.gspy 300
    ;;
setuid)
    [[ $(id -u) -eq 0 ]] || { echo "skipped: dropping privileges needs root"; exit 77; }
    # The collector's socket in a directory only root may enter, as `gpuspy record` makes it; the
    # app (started as root) becomes nobody before its first CUDA call. Its files go where nobody writes.
    mkdir -m 0700 private && mkdir -m 1777 pub
    "$gpuspy" collect --socket "$PWD/private/sock" -o "$PWD/collected.gspy" >collect.out 2>&1 &
    collector=$!
    hz_wait_for 30 test -S private/sock || hz_fail "the collector did not start"
    (cd pub && hz_run .. base "$prog" setuid "$work/pub/base.done" 65534)
    (cd pub && hz_run .. shim env LD_PRELOAD="$preload" GPUSPY_SOCKET="$work/private/sock" TMPDIR="$work/pub" \
        "$prog" setuid "$work/pub/shim.done" 65534)
    kill -INT $collector; wait $collector
    hz_same . base shim
    grep -q "changed its user (uid 0 when gpuspy loaded, 65534 now)" shim.err ||
        hz_fail "stderr does not name the cause: $(head -c 400 shim.err)"
    ;;
gone)
    # The directory the process started in is removed before its first CUDA call: the capture goes to
    # $TMPDIR, and stderr says so once.
    mkdir tmp base_dir shim_dir
    (cd base_dir && hz_run .. base "$prog" gone "$work/base.done" "$work/base_dir")
    (cd shim_dir && hz_run .. shim env LD_PRELOAD="$preload" TMPDIR="$work/tmp" "$prog" gone "$work/shim.done" "$work/shim_dir")
    hz_same . base shim
    caps=(tmp/gpuspy-*.gspy)
    pid=${caps[0]#tmp/gpuspy-}
    pid=${pid%.gspy}
    expect="gpuspy: cannot create $work/shim_dir/gpuspy-$pid.gspy (No such file or directory); writing $work/tmp/gpuspy-$pid.gspy instead"
    [[ $(hz_gpuspy_lines shim.err) -eq 1 ]] && grep -qxF "$expect" shim.err ||
        hz_fail "expected one line on stderr: '$expect'; got: $(grep '^gpuspy:' shim.err)"
    complete "${caps[0]}" 300
    ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
exit $hz_failed
