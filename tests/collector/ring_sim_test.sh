#!/usr/bin/env bash
# tests/collector/ring_sim_test.sh: the flight recorder with the real shim on the simulated driver. A
# `collect --ring 3600` collector; tiny_kernels (2000 launches of tiny_add) runs with the shim preloaded
# against it; `gpuspy ctl snapshot` then writes a capture whose report counts all 2000 launches of
# _Z8tiny_addPi, with its call sites symbolized (tiny_kernels.cu), the same as `gpuspy record`'s.
# usage: ring_sim_test.sh GPUSPY SHIM SIMCUDA_DIR APP
set -euo pipefail
cli=$1 shim=$2 simdir=$3 app=$4
dir=$(mktemp -d)
collector=
trap '[ -z "$collector" ] || kill -KILL "$collector" 2>/dev/null; rm -rf "$dir"' EXIT
"$cli" collect --socket "$dir/sock" --ring 3600 2>"$dir/collect.err" &
collector=$!
until python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$dir/sock" 2>/dev/null; do
    kill -0 "$collector" || { cat "$dir/collect.err"; exit 1; }
    sleep 0.05
done
GPUSPY_SOCKET=$dir/sock LD_PRELOAD=$shim LD_LIBRARY_PATH=$simdir "$app" >/dev/null
# The app has exited; the collector reads its last records when it gets to them: snapshot until the
# report counts the whole run (no time limit here beyond the test's own).
count=0
while :; do
    "$cli" ctl --socket "$dir/sock" snapshot -f -o "$dir/snap.gspy" 2>"$dir/ctl.err" || { sleep 0.2; continue; }
    "$cli" report --format json "$dir/snap.gspy" >"$dir/snap.json"
    count=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(sum(k["count"] for k in r["kernels"] if k["mangled"] == "_Z8tiny_addPi" or k["name"].startswith("tiny_add")))' "$dir/snap.json")
    [ "$count" -lt 2000 ] || break
    sleep 0.2
done
echo "snapshot: $(cat "$dir/ctl.err")"
[ "$count" -eq 2000 ] || { echo "FAIL: $count launches of tiny_add in the snapshot, 2000 made"; exit 1; }
grep -q 'tiny_kernels\.cu' "$dir/snap.json" || { echo "FAIL: the snapshot's call sites are not symbolized"; exit 1; }
kill -INT "$collector"
wait "$collector"
collector=
echo "ok: the snapshot of tiny_kernels holds its 2000 launches, symbolized"
