#!/usr/bin/env bash
# bench/dormant_instructions.sh: what the dormant shim (issue 17: outside a capture window) executes per
# hooked call, counted by callgrind rather than timed, so the figure holds on a loaded machine:
# bench/dormant_calls.c makes N rounds of 4 calls (launch, async copy, stream query, event record) without
# the shim and under the dormant shim (GPUSPY_PAUSED=1, 24-frame stacks and GPU timing configured, as a
# production preload would carry), each at two N; (instructions at 2N - at N) / (4 N) is one call's
# cost, and the shim's minus the bare driver's is the dormant path's. Prints one line per run and the result.
# Usage: bench/dormant_instructions.sh [BUILD_DIR] [N]   (needs valgrind)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
N=${2:-20000}
BIN=$BUILD/bin/dormant_calls
[ -x "$BIN" ] || BIN=$BUILD/bench/dormant_calls
[ -x "$BIN" ] || { echo "dormant_instructions.sh: dormant_calls not built in $BUILD" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "dormant_instructions.sh: valgrind not found" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export LD_LIBRARY_PATH=$BUILD/lib/simcuda SIMCUDA_QUIET=1 SIMCUDA_HOST_COST=0
ir() {  # tag, rounds, then environment words
    local tag=$1 n=$2
    shift 2
    env "$@" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$tag" "$BIN" "$n" >/dev/null 2>"$WORK/err.$tag" ||
        { echo "dormant_instructions.sh: run $tag failed:" >&2; cat "$WORK/err.$tag" >&2; exit 1; }
    awk '/^(summary|totals):/ { print $2; exit }' "$WORK/cg.$tag"
}
SHIM=(GPUSPY_PAUSED=1 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=1 GPUSPY_OUTPUT="$WORK/d-%p.gspy" LD_PRELOAD="$BUILD/lib/libgpuspy.so")
b1=$(ir bare1 "$N"); b2=$(ir bare2 $((2 * N)))
d1=$(ir dorm1 "$N" "${SHIM[@]}"); d2=$(ir dorm2 $((2 * N)) "${SHIM[@]}")
awk -v n="$N" -v b1="$b1" -v b2="$b2" -v d1="$d1" -v d2="$d2" 'BEGIN {
    bare = (b2 - b1) / (4 * n); dorm = (d2 - d1) / (4 * n)
    printf "bare driver: %.1f instructions per call (%d rounds: %d, %d rounds: %d)\n", bare, n, b1, 2 * n, b2
    printf "dormant shim: %.1f instructions per call (%d rounds: %d, %d rounds: %d)\n", dorm, n, d1, 2 * n, d2
    printf "dormant path: +%.1f instructions per call (mean of launch, copy, query, event record)\n", dorm - bare
}'
