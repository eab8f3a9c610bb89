#!/usr/bin/env bash
# stack_cache_e2e.sh: the launch loop of bench/e2e_loop.cpp (built -O2 without frame pointers, so its
# stacks go through unw_backtrace or the stack cache) on the simulated driver with its modelled host
# costs, with and without gpuspy, the stack cache on and off (GPUSPY_STACK_CACHE), with GPU timing
# (the defaults) and without (GPUSPY_GPU_TIME=0). Each round runs every configuration once, in an
# order turned each round; the ratios are taken within a round (paired) against the run without
# gpuspy, and against the same configuration with the cache off, and printed as median [quartiles].
# Usage: bench/stack_cache_e2e.sh BUILD_DIR [ROUNDS=15] [LAUNCHES=50000]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
ROUNDS=${2:-15}
N=${3:-50000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export LD_LIBRARY_PATH="$BUILD/lib/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
configs=(none full_cache full_nocache stacks_cache stacks_nocache)
run() {
    local shim=(GPUSPY_OUTPUT="$WORK/c-%p.gspy" LD_PRELOAD="$BUILD/lib/libgpuspy.so")
    case $1 in
    none) env "$BUILD/bin/e2e_loop" launch "$N" ;;
    full_cache) env "${shim[@]}" GPUSPY_STACK_CACHE=1 "$BUILD/bin/e2e_loop" launch "$N" ;;
    full_nocache) env "${shim[@]}" GPUSPY_STACK_CACHE=0 "$BUILD/bin/e2e_loop" launch "$N" ;;
    stacks_cache) env "${shim[@]}" GPUSPY_GPU_TIME=0 GPUSPY_STACK_CACHE=1 "$BUILD/bin/e2e_loop" launch "$N" ;;
    stacks_nocache) env "${shim[@]}" GPUSPY_GPU_TIME=0 GPUSPY_STACK_CACHE=0 "$BUILD/bin/e2e_loop" launch "$N" ;;
    esac | sed -n 's/.*"ns_per_iteration":\([0-9.]*\).*/\1/p'
    rm -f "$WORK"/c-*.gspy
}
for ((r = 0; r < ROUNDS; ++r)); do
    for ((i = 0; i < ${#configs[@]}; ++i)); do
        c=${configs[$(((i + r) % ${#configs[@]}))]}
        echo "$r $c $(run "$c")"
    done
done > "$WORK/runs.txt"
python3 - "$WORK/runs.txt" "$N" "$ROUNDS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, c, v in rows:
    by.setdefault(int(r), {})[c] = float(v)
def q(xs):
    xs = sorted(xs); n = len(xs)
    return xs[n // 4], st.median(xs), xs[(3 * n) // 4]
print(f"launch loop, {sys.argv[2]} launches a run, {sys.argv[3]} rounds")
print("| config | median per launch | paired ratio to none: median [quartiles] | paired ratio to its cache-off run |")
print("|---|---|---|---|")
for c in ["none", "full_cache", "full_nocache", "stacks_cache", "stacks_nocache"]:
    vals = [by[r][c] for r in by]
    ratio = [by[r][c] / by[r]["none"] for r in by]
    lo, md, hi = q(ratio)
    off = {"full_cache": "full_nocache", "stacks_cache": "stacks_nocache"}.get(c)
    vs = ""
    if off:
        a, m, b = q([by[r][c] / by[r][off] for r in by])
        vs = f"{m:.3f} [{a:.3f}, {b:.3f}]"
    print(f"| {c} | {st.median(vals):,.0f} ns | {md:.3f} [{lo:.3f}, {hi:.3f}] | {vs} |")
PY
