#!/usr/bin/env bash
# bench/python_hook.sh: the hook's cost for a Python program (issue 18), on the simulated driver:
# bench/python_hook.py without gpuspy, under the shim with 24-frame native stacks only
# (GPUSPY_PYTHON=0), and with Python frames merged in (the default), GPU timing off. Prints one line per
# configuration, the added cost per call by the medians, and the same taken within each round (paired); bench/RESULTS.md ("Python frames") records a run.
# Usage: bench/python_hook.sh [BUILD_DIR] [ROUNDS] [PYTHON]   (default build, 5 rounds; python3's interpreter, or PYTHON: e.g. a pyenv 3.N's bin/python3.N)
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

# Rounds of the three configurations, their order turned by one each round (a slow spell of the
# machine, seconds long, falls on all three alike and on none of them always last); each configuration's
# median over the rounds, and the added costs taken within each round (paired), their median and
# quartiles: on this shared machine the paired figures are the ones to read.
configs=(plain native python)
run_config() {
    case $1 in
    plain) echo "plain $(once)" ;;
    native) echo "native $(once GPUSPY_PYTHON=0 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=0 GPUSPY_OUTPUT="$WORK/n-%p.gspy" LD_PRELOAD="$SHIM")" ;;
    python) echo "python $(once GPUSPY_PYTHON=1 GPUSPY_STACK_DEPTH=24 GPUSPY_GPU_TIME=0 GPUSPY_OUTPUT="$WORK/p-%p.gspy" LD_PRELOAD="$SHIM")" ;;
    esac
}
for r in $(seq 0 $((ROUNDS - 1))); do
    for k in 0 1 2; do run_config "${configs[$(((r + k) % 3))]}"; done
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
def paired(a, b):
    d = sorted(x - y for x, y in zip(v[a], v[b]))
    q = statistics.quantiles(d, n=4) if len(d) > 1 else [d[0]] * 3
    return f"{statistics.median(d):+.0f} ns [quartiles {q[0]:+.0f}, {q[2]:+.0f}]"
print(f"paired by round: hook with native stacks {paired('native', 'plain')}; with Python frames "
      f"{paired('python', 'plain')}; Python frames alone {paired('python', 'native')}")
PY
