#!/usr/bin/env bash
# tests/libs/tp_launch_status.sh: tp_launch as a launcher must behave: each rank's RANK/LOCAL_RANK/WORLD_SIZE,
# the id rank 0 writes reaching every other rank whole, and the job's exit status the first failing rank's
# (128 + the signal for a rank killed by one; 127 for a program that cannot start; 0 when all succeed), and
# CUDA_VISIBLE_DEVICES per rank with --visible-devices.
# usage: tp_launch_status.sh TP_LAUNCH
set -uo pipefail
launch=$1
fails=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
check() {  # what, expected status, command...
    local what=$1 want=$2
    shift 2
    "$@" > "$tmp/out" 2> "$tmp/err"
    local got=$?
    if [[ $got -eq $want ]]; then echo "ok   $what: status $got"; else echo "FAIL $what: status $got, expected $want"; fails=1; fi
}
check "every rank succeeds" 0 "$launch" 4 bash -c 'exit 0'
check "rank 2 fails with 7" 7 "$launch" 4 bash -c '[[ $RANK != 2 ]] || exit 7'
grep -q "rank 2 (pid [0-9]*) ended with status 7" "$tmp/err" && echo "ok   the failing rank is named" \
    || { echo "FAIL the failing rank is not named: $(cat "$tmp/err")"; fails=1; }
check "a rank killed by SIGTERM" 143 "$launch" 3 bash -c '[[ $RANK != 1 ]] || kill -TERM $$'
check "a program that cannot start" 127 "$launch" 2 /nonexistent/program
check "the ranks' variables" 0 "$launch" 3 bash -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE"'
[[ "$(sort "$tmp/out" | tr '\n' ';')" == "0 0 3;1 1 3;2 2 3;" ]] && echo "ok   RANK LOCAL_RANK WORLD_SIZE" \
    || { echo "FAIL the ranks' variables: $(cat "$tmp/out")"; fails=1; }
# The id: rank 0 writes 128 bytes to TP_ID_OUT_FD, every other rank reads them from TP_ID_IN_FD.
check "the id passed on" 0 "$launch" 4 bash -c \
    'if [[ $RANK == 0 ]]; then printf "%0128d" 42 >&$TP_ID_OUT_FD; else echo "$RANK $(head -c 128 <&$TP_ID_IN_FD)"; fi'
id=$(printf "%0128d" 42)
[[ "$(sort "$tmp/out" | tr '\n' ';')" == "1 $id;2 $id;3 $id;" ]] && echo "ok   ranks 1-3 read rank 0's id whole" \
    || { echo "FAIL the id: $(cat "$tmp/out")"; fails=1; }
# One GPU per rank (--visible-devices, or TP_VISIBLE_DEVICES=1): CUDA_VISIBLE_DEVICES=<local rank>, or the local
# rank's entry of the launcher's own list; without it the launcher leaves the variable alone.
visible() {  # what, expected sorted "RANK CUDA_VISIBLE_DEVICES;..." lines, command...
    local what=$1 want=$2
    shift 2
    check "$what" 0 "$@" bash -c 'echo "$RANK ${CUDA_VISIBLE_DEVICES-unset}"'
    [[ "$(sort "$tmp/out" | tr '\n' ';')" == "$want" ]] && echo "ok   $what: $want" \
        || { echo "FAIL $what: $(tr '\n' ';' < "$tmp/out"), expected $want"; fails=1; }
}
visible "--visible-devices" "0 0;1 1;2 2;" env -u CUDA_VISIBLE_DEVICES "$launch" --visible-devices 3
visible "TP_VISIBLE_DEVICES=1" "0 0;1 1;2 2;" env -u CUDA_VISIBLE_DEVICES TP_VISIBLE_DEVICES=1 "$launch" 3
visible "the launcher's own list" "0 5;1 7;2 6;" env CUDA_VISIBLE_DEVICES=5,7,6 "$launch" --visible-devices 3
visible "no option" "0 unset;1 unset;" env -u CUDA_VISIBLE_DEVICES "$launch" 2
exit $fails
