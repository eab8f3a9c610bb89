#!/usr/bin/env bash
# tests/report/memory.sh: the report's "GPU memory" section against what tests/apps/gpu_memory really did.
# The program prints its own truth ("truth <section> key=value...": its peak, what each call site held at
# the peak, at the failure and at exit, pinned and managed memory), computed from the sizes it used; the
# JSON report's memory rows must agree with it: the device peak (within one temporary), the call sites
# holding memory at the peak, the leak (leaky_step: every allocation of the loop, called a leak; nothing
# else a leak, the weights freed), the failed 512 MiB allocation (out of memory, at too_big, the memory in
# use then and who held it), pinned and managed memory, a memory-leak finding at leaky_step, and the text
# report's "GPU memory" section naming the leak site. Figures come from the truth, never from this file.
#
# The failure comes from the simulated driver (SIMCUDA_FAIL, from tests/apps/sim_env.txt, which says which
# cuMemAlloc_v2 call it is); the driver's own trace (SIMCUDA_TRACE_CALLS) confirms that cudart made no
# allocation of its own, so the bytes in use are compared exactly.
# usage: memory.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
if [[ $# -ne 3 ]]; then
    echo "usage: $0 GPUSPY PROGRAM WORKDIR" >&2
    exit 2
fi
gpuspy=$1 prog=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/trace" || exit 2

# The program's simulated settings: its SIMCUDA_FAIL.
mapfile -t sim_vars < <(awk '$1 == "gpu_memory" { for (i = 2; i <= NF; i++) print $i }' "$here/../apps/sim_env.txt")
if ! printf '%s\n' "${sim_vars[@]}" | grep -q '^SIMCUDA_FAIL='; then
    echo "memory.sh: FAIL: tests/apps/sim_env.txt gives gpu_memory no SIMCUDA_FAIL" >&2
    exit 2
fi
echo "memory.sh: settings: ${sim_vars[*]}"

echo "memory.sh: plain run: $prog"
env "${sim_vars[@]}" "$prog" > "$work/plain.out" 2> "$work/plain.err"
rc=$?
cat "$work/plain.out"
if [[ $rc -ne 0 ]]; then
    cat "$work/plain.err" >&2
    echo "memory.sh: FAIL: $prog exited with status $rc without gpuspy (expected 0; if too_big's allocation did not fail, the cuMemAlloc_v2 count in sim_env.txt is off)" >&2
    exit 1
fi

echo "memory.sh: gpuspy record --sim -f -o $work/capture.gspy -- $prog"
env "${sim_vars[@]}" SIMCUDA_TRACE="$work/trace/trace.%p.jsonl" SIMCUDA_TRACE_CALLS=1 \
    "$gpuspy" record --sim -f -o "$work/capture.gspy" -- "$prog" > "$work/record.out" 2> "$work/record.err"
rc=$?
if [[ $rc -ne 0 ]]; then
    cat "$work/record.err" >&2
    echo "memory.sh: FAIL: gpuspy record returned $rc (the program's exit status; expected 0)" >&2
    exit 1
fi
# The program's stdout comes first, unchanged; gpuspy's text report follows it.
source "$here/same_stdout.sh"
same_stdout memory.sh "$work/plain.out" "$work/record.out" || exit 1

"$gpuspy" report --format json "$work/capture.gspy" > "$work/report.json" \
    || { echo "memory.sh: FAIL: gpuspy report --format json failed" >&2; exit 1; }
"$gpuspy" report "$work/capture.gspy" > "$work/report.txt" \
    || { echo "memory.sh: FAIL: gpuspy report failed" >&2; exit 1; }

python3 "$here/memory_check.py" "$work/plain.out" "$work/report.json" "$work/report.txt" "$work/trace"
rc=$?

# The Kernels table split by launch configuration (issue 33, "shapes"): step_kernel runs at three grid
# sizes (the temporary's, the leak's, the intermediate's); a row per kernel, grid and block, each with the
# launches the simulated driver ran at that configuration.
"$gpuspy" report --by-launch-config --format json "$work/capture.gspy" > "$work/by_config.json" \
    || { echo "memory.sh: FAIL: gpuspy report --by-launch-config failed" >&2; exit 1; }
python3 - "$work/by_config.json" "$work/report.json" "$work"/trace/*.jsonl <<'PY' || rc=1
import collections, json, sys
split, whole = (json.load(open(p)) for p in sys.argv[1:3])
truth = collections.Counter()
for path in sys.argv[3:]:
    for line in open(path):
        if '"op":"kernel"' in line:
            o = json.loads(line)
            g, b = o["grid"], o["block"]
            truth[(o["name"], f"grid {g[0]}x{g[1]}x{g[2]} block {b[0]}x{b[1]}x{b[2]}")] += 1
rows = collections.Counter({(k["mangled"], k.get("launch_config", "")): k["count"] for k in split["kernels"]})
ok = rows == truth and len(truth) >= 3
print(("ok   " if ok else "FAIL ") + f"--by-launch-config: a kernel row per configuration the driver ran: {dict(rows)} (trace {dict(truth)})")
same = sum(k["count"] for k in split["kernels"]) == sum(k["count"] for k in whole["kernels"]) and \
       all("launch_config" not in k for k in whole["kernels"])
print(("ok   " if same else "FAIL ") + "--by-launch-config: the same launches as the plain table, which has no configurations")
sys.exit(0 if ok and same else 1)
PY
# Stream-ordered memory: cudaFreeAsync gives memory back when its stream reaches it. pool_other frees a
# buffer on a stream behind a 50 ms kernel (long beside any descheduling of a loaded host) and allocates another at once: both are in use together.
# pool_same does it on one stream: never both.
for mode in pool_other pool_same; do
    SIMCUDA_KERNEL_NS=pool_long=50000000 "$gpuspy" record --sim -f -o "$work/$mode.gspy" -- "$prog" "$mode" > "$work/$mode.out" 2>&1 \
        || { cat "$work/$mode.out" >&2; echo "memory.sh: FAIL: $mode under gpuspy" >&2; exit 1; }
    "$gpuspy" report --format json "$work/$mode.gspy" > "$work/$mode.json" || { echo "memory.sh: FAIL: report of $mode" >&2; exit 1; }
    "$gpuspy" export "$work/$mode.gspy" --format perfetto -f -o "$work/$mode.trace.json" 2>/dev/null \
        || { echo "memory.sh: FAIL: perfetto export of $mode" >&2; exit 1; }
    python3 - "$work/$mode.out" "$work/$mode.json" "$work/$mode.trace.json" <<'PY' || rc=1
import json, re, sys
truth = dict(kv.split("=") for kv in re.search(r"^truth pool (.*)$", open(sys.argv[1]).read(), re.M).group(1).split())
rows = [m for m in json.load(open(sys.argv[2]))["memory"] if m["space"] == "device"]
row = rows[0] if len(rows) == 1 else None
ok = row is not None and row["peak_bytes"] == int(truth["device_peak_bytes"]) and row["allocations"] == 3 and \
     row["releases"] == 3 and row["in_use_end_bytes"] == 0 and row["unknown_releases"] == 0
print(("ok   " if ok else "FAIL ") + f"pool {truth['mode']} stream: device peak {row and row['peak_bytes']} = the program's "
      f"{truth['device_peak_bytes']}, 3 allocations and releases, nothing left")
counter = [e["args"]["in use (bytes)"] for e in json.load(open(sys.argv[3]))["traceEvents"]
           if e.get("ph") == "C" and e.get("name") == "GPU memory: device 0"]
same = bool(counter) and max(counter) == int(truth["device_peak_bytes"]) and counter[-1] == 0
print(("ok   " if same else "FAIL ") + f"pool {truth['mode']} stream: the Perfetto counter peaks at {max(counter) if counter else '-'} and ends at 0")
sys.exit(0 if ok and same else 1)
PY
done

[[ $rc -ne 0 ]] && echo "memory.sh: files in $work" >&2
exit $rc
