#!/usr/bin/env bash
# bench/python_hook.sh: the hook's cost for a Python program (issue 18), on the simulated driver:
# bench/python_hook.py without gpuspy, under the shim with 24-frame native stacks only
# (GPUSPY_PYTHON=0), and with Python frames merged in (the default), GPU timing off. Prints one line per
# configuration and the added cost per call; bench/RESULTS.md ("Python frames") records a run.
# Usage: bench/python_hook.sh [BUILD_DIR] [ROUNDS] [PYTHON]   (default build, 3 rounds: the medians'
# median; python3's interpreter, or PYTHON: e.g. a pyenv 3.N's bin/python3.N)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
ROUNDS=${2:-3}
SHIM=$BUILD/lib/libgpuspy.so
SIM=$BUILD/lib/simcuda
# The interpreter itself, not a wrapper script (pyenv's) that would load the shim too.
PYTHON=${3:-$(python3 -c 'import sys; print(sys.executable)')}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

run() {  # name, then environment words
    local name=$1
    shift
    local values=()
    for _ in $(seq "$ROUNDS"); do
        values+=("$(env LD_LIBRARY_PATH="$SIM" "$@" "$PYTHON" "$ROOT/bench/python_hook.py" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["median_ns"])')")
    done
    printf '%s\n' "${values[@]}" | sort -g | awk -v n="$name" '{ v[NR] = $1 } END { printf "%s %s\n", n, v[int((NR + 1) / 2)] }'
}

{
    run plain
    run native GPUSPY_PYTHON=0 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=0 GPUSPY_OUTPUT="$WORK/n-%p.gspy" LD_PRELOAD="$SHIM"
    run python GPUSPY_PYTHON=1 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=0 GPUSPY_OUTPUT="$WORK/p-%p.gspy" LD_PRELOAD="$SHIM"
} | tee "$WORK/lines"
awk '{ v[$1] = $2 } END {
    printf "hook with 24-frame native stacks: +%.0f ns per call; with Python frames: +%.0f ns per call (Python frames alone: +%.0f ns)\n",
           v["native"] - v["plain"], v["python"] - v["plain"], v["python"] - v["native"] }' "$WORK/lines"
