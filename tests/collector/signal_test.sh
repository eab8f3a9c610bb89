#!/usr/bin/env bash
# tests/collector/signal_test.sh: SIGTERM sent to `gpuspy record` reaches the command, whose exit
# status gpuspy returns, and the capture is still written.
set -uo pipefail
cli=$1 shim=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
GPUSPY_SHIM=$shim "$cli" record -o "$dir/s.gspy" -- /bin/sh -c 'trap "exit 7" TERM; echo started; while :; do sleep 0.05; done' \
  >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 100); do grep -q started "$dir/out" 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 7 ] || { echo "expected 7, got $rc"; cat "$dir/err"; exit 1; }
grep -q "wrote $dir/s.gspy: " "$dir/err" || { cat "$dir/err"; exit 1; }
echo ok
