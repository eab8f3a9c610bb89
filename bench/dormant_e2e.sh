#!/usr/bin/env bash
# bench/dormant_e2e.sh: "leave libgpuspy.so preloaded in a server at no measurable cost" (issue 17),
# end to end: bench/e2e_loop.cpp's timed loop (launch-bound: 3 us launches, a sync every 100; or mixed)
# without the shim and under the dormant shim (GPUSPY_PAUSED=1: preloaded, outside any window), in
# alternating pairs; prints each pair's ratio (dormant / none) and their median and range.
# Usage: bench/dormant_e2e.sh [BUILD_DIR] [PAIRS] [launch|mixed] [N]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PAIRS=${2:-15}
MODE=${3:-launch}
N=${4:-50000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export LD_LIBRARY_PATH=$BUILD/lib/simcuda SIMCUDA_QUIET=1
wall() { "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["wall_ns"])'; }
: >"$WORK/ratios"
for i in $(seq "$PAIRS"); do
    a=$(wall "$BUILD/bin/e2e_loop" "$MODE" "$N")
    b=$(wall env GPUSPY_PAUSED=1 GPUSPY_STACK_DEPTH=24 GPUSPY_OUTPUT="$WORK/d-%p.gspy" LD_PRELOAD="$BUILD/lib/libgpuspy.so" \
        "$BUILD/bin/e2e_loop" "$MODE" "$N")
    echo "pair $i: none $a ns, dormant $b ns, ratio $(python3 -c "print(round($b / $a, 4))")"
    python3 -c "print($b / $a)" >>"$WORK/ratios"
    rm -f "$WORK"/d-*.gspy
done
python3 - "$WORK/ratios" <<'PY'
import statistics, sys
r = sorted(float(x) for x in open(sys.argv[1]))
print(f"dormant / none, {len(r)} pairs: median {statistics.median(r):.4f} (min {r[0]:.4f}, max {r[-1]:.4f})")
PY
