#!/usr/bin/env bash
# tests/report/memory_pools.sh: stream-ordered pools (tests/apps/pool_memory) against the driver's own answers.
# Each story prints its truth (cudaMemPoolGetAttribute: reserved and used, current and high; the growths of
# the reservation the program counted); the JSON report's pool rows must agree: use exact (it follows every
# allocation and free), the reservation a floor (never above the driver's, and within one 2 MiB chunk of
# it: the simulated driver reserves in 2 MiB chunks), growths and regrowths exact for chunk-sized buffers;
# keep: a pool-keeps-memory finding, high, naming the failed cudaMalloc that the pool's unused memory
# starved; regrow: a pool-regrowth finding whose saving, against the simulated driver's cost of a growth
# (tests/simcuda/src/memory.cpp, kPoolGrowNs = 20 us per growth), is neither below half of it nor far above;
# regrow_fixed (the threshold the finding asks for): no pool-regrowth finding and one growth; created: a
# pool of its own serving both cudaMallocAsync (as the device's current pool) and cudaMallocFromPoolAsync,
# its trim giving everything back. The text report names the pool; Perfetto has the held track; `gpuspy
# diff regrow regrow_fixed` shows pool-regrowth resolved, and its saving is the replay's (pool-threshold).
# usage: memory_pools.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
if [[ $# -ne 3 ]]; then
    echo "usage: $0 GPUSPY PROGRAM WORKDIR" >&2
    exit 2
fi
gpuspy=$1 prog=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" || exit 2
mapfile -t sim_vars < <(awk '$1 == "pool_memory" { for (i = 2; i <= NF; i++) print $i }' "$here/../apps/sim_env.txt")
rc=0
for mode in keep regrow regrow_fixed created; do
    env "${sim_vars[@]}" "$gpuspy" record --sim -f -o "$work/$mode.gspy" -- "$prog" "$mode" > "$work/$mode.out" 2> "$work/$mode.err" \
        || { cat "$work/$mode.err" >&2; echo "memory_pools.sh: FAIL: $mode under gpuspy" >&2; exit 1; }
    "$gpuspy" report --format json "$work/$mode.gspy" > "$work/$mode.json" || { echo "memory_pools.sh: FAIL: report of $mode" >&2; exit 1; }
    "$gpuspy" report "$work/$mode.gspy" > "$work/$mode.txt" || { echo "memory_pools.sh: FAIL: text report of $mode" >&2; exit 1; }
    "$gpuspy" export "$work/$mode.gspy" --format perfetto -f -o "$work/$mode.trace.json" 2>/dev/null \
        || { echo "memory_pools.sh: FAIL: perfetto export of $mode" >&2; exit 1; }
    python3 "$here/memory_pools_check.py" "$mode" "$work/$mode.out" "$work/$mode.json" "$work/$mode.txt" "$work/$mode.trace.json" || rc=1
done
# The fix the finding asks for (regrow_fixed: the threshold set) resolves it.
"$gpuspy" diff --format json "$work/regrow.gspy" "$work/regrow_fixed.gspy" > "$work/regrow.diff.json" \
    || { echo "memory_pools.sh: FAIL: gpuspy diff regrow regrow_fixed" >&2; exit 1; }
python3 - "$work/regrow.diff.json" <<'PY' || rc=1
import json, sys
st = {f["rule"]: f["status"] for f in json.load(open(sys.argv[1]))["findings"]}
ok = st.get("pool-regrowth") == "resolved"
print(("ok   " if ok else "FAIL ") + f"gpuspy diff regrow regrow_fixed: pool-regrowth {st.get('pool-regrowth')}")
sys.exit(0 if ok else 1)
PY
[[ $rc -ne 0 ]] && echo "memory_pools.sh: files in $work" >&2
exit $rc
