#!/usr/bin/env bash
# tests/collector/collect_test.sh: `gpuspy collect` receives from separately started processes and
# writes its capture on SIGTERM; the socket path is private (0600) and gone afterwards.
set -euo pipefail
cli=$1 shim=$2
dir=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
"$cli" collect --socket "$dir/sock" -o "$dir/c.gspy" 2>"$dir/err" &
pid=$!
for _ in $(seq 100); do [ -S "$dir/sock" ] && break; sleep 0.05; done
[ -S "$dir/sock" ] || { echo "no socket"; cat "$dir/err"; exit 1; }
[ "$(stat -c %a "$dir/sock")" = 600 ] || { echo "socket mode $(stat -c %a "$dir/sock")"; exit 1; }
GPUSPY_SOCKET="$dir/sock" LD_PRELOAD="$shim" /bin/true
GPUSPY_SOCKET="$dir/sock" LD_PRELOAD="$shim" /bin/echo hello >/dev/null
GPUSPY_SOCKET="$dir/sock" LD_PRELOAD="$shim" FAKE_SHIM_GARBAGE=1 /bin/true
sleep 0.3
kill -TERM $pid
wait $pid || { echo "collect exited $?"; cat "$dir/err"; exit 1; }
pid=
grep -q "wrote $dir/c.gspy: 2 process(es), 2 calls, 1 bad stream" "$dir/err" || { echo "summary:"; cat "$dir/err"; exit 1; }
[ ! -e "$dir/sock" ] || { echo "socket left behind"; exit 1; }
[ "$(stat -c %a "$dir/c.gspy")" = 600 ] || { echo "capture mode $(stat -c %a "$dir/c.gspy")"; exit 1; }
"$cli" dump "$dir/c.gspy" >"$dir/dump"
grep -q 'command="/bin/echo hello"' "$dir/dump" || { echo "dump:"; cat "$dir/dump"; exit 1; }
echo ok
