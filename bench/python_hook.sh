#!/usr/bin/env bash
# bench/python_hook.sh: the hook's cost for a Python program (issue 18), on the simulated driver:
# bench/python_hook.py without gpuspy, under the shim with 24-frame native stacks only
# (GPUSPY_PYTHON=0), and with Python frames merged in (the default), GPU timing off. Prints one line per
# configuration and the added cost per call; bench/RESULTS.md ("Python frames") records a run.
# Usage: bench/python_hook.sh [BUILD_DIR] [ROUNDS] [PYTHON]   (default build, 5 rounds: the medians'
# median; python3's interpreter, or PYTHON: e.g. a pyenv 3.N's bin/python3.N)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
ROUNDS=${2:-5}
SHIM=$BUILD/lib/libgpuspy.so
SIM=$BUILD/lib/simcuda
# The interpreter itself, not a wrapper script (pyenv's) that would load the shim too.
PYTHON=${3:-$(python3 -c 'import sys; print(sys.executable)')}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

once() {  # environment words; prints the run's median ns per call
    env LD_LIBRARY_PATH="$SIM" "$@" "$PYTHON" "$ROOT/bench/python_hook.py" |
        "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["median_ns"])'
}

# Rounds of the three configurations in turn (a machine's slow spell falls on all three alike); each
# configuration's median over the rounds.
for _ in $(seq "$ROUNDS"); do
    echo "plain $(once)"
    echo "native $(once GPUSPY_PYTHON=0 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=0 GPUSPY_OUTPUT="$WORK/n-%p.gspy" LD_PRELOAD="$SHIM")"
    echo "python $(once GPUSPY_PYTHON=1 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=0 GPUSPY_OUTPUT="$WORK/p-%p.gspy" LD_PRELOAD="$SHIM")"
    rm -f "$WORK"/*.gspy
done > "$WORK/rounds"
"$PYTHON" - "$WORK/rounds" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    name, ns = line.split()
    v.setdefault(name, []).append(float(ns))
m = {k: statistics.median(x) for k, x in v.items()}
for k in ("plain", "native", "python"):
    print(f"{k} {m[k]:.1f}   (rounds: {' '.join(f'{x:.0f}' for x in v[k])})")
print(f"hook with 24-frame native stacks: +{m['native'] - m['plain']:.0f} ns per call; with Python frames: "
      f"+{m['python'] - m['plain']:.0f} ns per call (Python frames alone: +{m['python'] - m['native']:.0f} ns)")
PY
