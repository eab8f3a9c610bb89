#!/usr/bin/env bash
# socket_run.sh: the shim streams to a Unix socket (GPUSPY_SOCKET): a sink accepts one connection and
# stores the bytes, which must decode into a capture matching the ground truth; then, with nobody at
# the socket, the shim falls back to a file and says so exactly once on stderr.
# Usage: socket_run.sh COMPARE LIBGPUSPY WORKDIR APP
set -uo pipefail
compare=$1 lib=$2 work=$3 app=$4
rm -rf "$work"
mkdir -p "$work"
sock="$work/collector.sock"
python3 - "$sock" "$work/received.gspy" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
with open(sys.argv[2], "wb") as f:
    while True:
        b = c.recv(1 << 16)
        if not b: break
        f.write(b)
PY
sink=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
LD_PRELOAD="$lib" GPUSPY_SOCKET="$sock" SIMCUDA_TRACE="$work/trace.%p.jsonl" "$app" >/dev/null || exit 1
wait $sink
t=("$work"/trace.*.jsonl)
"$compare" --require-gpu "$work/received.gspy" "${t[0]}" || exit 1
# Nobody listening now: a file instead, one line on stderr.
(cd "$work" && LD_PRELOAD="$lib" GPUSPY_SOCKET="$sock" "$app" >/dev/null 2>"$work/fallback.err") || exit 1
n=$(grep -c "^gpuspy: no collector" "$work/fallback.err")
[[ $n -eq 1 ]] || { echo "FAIL: expected one fallback notice, got $n" >&2; exit 1; }
f=("$work"/gpuspy-*.gspy)
"$compare" "${f[0]}" - || exit 1
