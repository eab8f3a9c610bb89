#!/usr/bin/env bash
# tests/collector/write_fault_test.sh: the capture stops being writable while `gpuspy collect` runs
# (a file size limit, RLIMIT_FSIZE: write() fails with EFBIG as on a full disk; `tmpfs` mode: a full
# 256 KiB tmpfs, ENOSPC, where mount works). The collector must go on reading its client (which then
# ends as it does with an unlimited file), count every call, say so once on stderr, not die, leave a
# capture that reads up to the failure, and exit 1. The same run without a limit is the reference.
# usage: write_fault_test.sh GPUSPY SYNTH_CLIENT RECORDS [fsize|tmpfs]
set -uo pipefail
cli=$1 client=$2 records=$3 mode=${4:-fsize}
dir=$(mktemp -d)
collector= mounted=
trap '[ -z "$collector" ] || kill -KILL $collector 2>/dev/null; [ -z "$mounted" ] || umount "$dir/small"; rm -rf "$dir"' EXIT

# run NAME OUTPUT_DIR [LIMIT_KIB]: collect one client's stream into OUTPUT_DIR/NAME.gspy; leaves
# NAME.rc (collect's status), NAME.err (its stderr), NAME.client (the client's line and status).
run() {
    local name=$1 out=$2 limit=${3:-unlimited}
    ( [ "$limit" = unlimited ] || ulimit -f "$limit"; exec "$cli" collect --socket "$dir/$name.sock" -o "$out/$name.gspy" ) \
        2>"$dir/$name.err" &
    collector=$!
    for _ in $(seq 200); do [ -S "$dir/$name.sock" ] && break; sleep 0.05; done
    [ -S "$dir/$name.sock" ] || { echo "the collector never listened"; cat "$dir/$name.err"; exit 1; }
    "$client" "$records" "$dir/$name.sock" >"$dir/$name.client"
    echo "client status $?" >>"$dir/$name.client"
    kill -INT $collector
    wait $collector
    echo $? >"$dir/$name.rc"
    collector=
}

run base "$dir"
case $mode in
fsize) run fault "$dir" 256 ;;
tmpfs)
    mkdir "$dir/small"
    mount -t tmpfs -o size=256k gpuspy-test "$dir/small" 2>/dev/null || { echo "cannot mount a tmpfs here: skipped"; exit 77; }
    mounted=1
    run fault "$dir/small" ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

fail=0
bad() { echo "FAIL: $*"; fail=1; }
read -r _ _ _ sent_calls _ <"$dir/base.client"
cmp -s "$dir/base.client" "$dir/fault.client" || bad "the client ended differently: $(cat "$dir/base.client") / $(cat "$dir/fault.client")"
[ "$(cat "$dir/base.rc")" = 0 ] || bad "collect without a limit exited $(cat "$dir/base.rc")"
[ "$(cat "$dir/fault.rc")" = 1 ] || bad "collect with a failed capture exited $(cat "$dir/fault.rc"), expected 1"
grep -q "^gpuspy: wrote .*: 1 process(es), $sent_calls calls" "$dir/base.err" || bad "reference run: $(cat "$dir/base.err")"
# Said once when it happened, and once in the summary, which still counts every call.
n=$(grep -c "^gpuspy: cannot write .*(\(File too large\|No space left on device\) at offset [0-9]*): the capture ends there; still collecting" "$dir/fault.err")
[ "$n" = 1 ] || bad "$n lines saying the capture cannot be written, expected 1"
grep -q "^gpuspy: .*fault.gspy is incomplete: writing it failed (.*); 1 process(es), $sent_calls calls received; [0-9]* bytes written, [1-9][0-9]* bytes of records received after the failure not written$" "$dir/fault.err" ||
    bad "no summary counting the $sent_calls calls"
lines=$(grep -c '^gpuspy' "$dir/fault.err")
[ "$lines" = 3 ] || bad "$lines lines from gpuspy, expected 3 (collecting, cannot write, incomplete)"
# What was written reads as an unfinished capture, not a damaged one.
fault_out=$( [ "$mode" = tmpfs ] && echo "$dir/small" || echo "$dir")
"$cli" dump "$fault_out/fault.gspy" >"$dir/dump.out" 2>"$dir/dump.err"
grep -q "capture not finished" "$dir/dump.err" "$dir/dump.out" || bad "the capture does not read as unfinished: $(head -c 500 "$dir/dump.err")"
grep -q "bad magic\|damaged\|checksum" "$dir/dump.err" && bad "the capture is damaged: $(cat "$dir/dump.err")"
[ $fail = 0 ] && echo "ok: $sent_calls calls counted, $(grep -o '[0-9]* bytes written' "$dir/fault.err")"
cat "$dir/fault.err"
exit $fail
