#!/usr/bin/env bash
# tests/collector/late_wait_test.sh: record's command exits and leaves a descendant that carries the
# shim and runs on (a daemon). record waits for it and, after 2 s, names it on stderr; SIGINT stops the
# wait: record names what it leaves running, writes its capture and returns the command's status.
# usage: late_wait_test.sh GPUSPY FAKE_SHIM
set -uo pipefail
cli=$1 shim=$2
dir=$(mktemp -d)
trap '[ -f "$dir/daemon.pid" ] && kill "$(cat "$dir/daemon.pid")" 2>/dev/null; rm -rf "$dir"' EXIT
GPUSPY_SHIM=$shim "$cli" record -o "$dir/w.gspy" -- /bin/sh -c '(exec sleep 60 & echo $! >"$0") && exit 4' "$dir/daemon.pid" \
    >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 200); do grep -q "still running with gpuspy loaded" "$dir/err" && break; sleep 0.05; done
fail=0
daemon=$(cat "$dir/daemon.pid" 2>/dev/null)
grep -q "^gpuspy: /bin/sh has exited; waiting for 1 process(es) still running with gpuspy loaded or its settings: pid $daemon (sleep) (Ctrl-C to stop waiting)$" "$dir/err" ||
    { echo "FAIL: record did not say it waits for pid $daemon"; fail=1; }
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 4 ] || { echo "FAIL: status $rc, the command's was 4"; fail=1; }
grep -q "^gpuspy: stopped waiting; still running with gpuspy loaded or its settings, not in this capture from now on: pid $daemon (sleep)$" "$dir/err" ||
    { echo "FAIL: record did not name what it left running"; fail=1; }
grep -q "^gpuspy: wrote $dir/w.gspy: 2 process(es)" "$dir/err" || { echo "FAIL: no capture of sh and sleep"; fail=1; }
kill -0 "$daemon" 2>/dev/null || { echo "FAIL: the daemon did not outlive record"; fail=1; }
[ $fail = 0 ] && echo ok
cat "$dir/err"
exit $fail
