#!/usr/bin/env bash
# tests/report/stack_cut.sh: a stack that ends inside a library at the depth budget says so (issue 28):
# cublas_gemm recorded with --stack-depth 8 has sites inside cuBLAS whose caller lies beyond the budget,
# and their labels say the stack was cut there and how to reach the caller; at the default depth every
# site of the main thread reaches main and none says so.
# usage: stack_cut.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 2
"$gpuspy" record --sim --stack-depth 8 -f -o "$work/cut.gspy" -- "$prog" > "$work/cut.out" 2>&1 || { cat "$work/cut.out"; exit 1; }
"$gpuspy" record --sim -f -o "$work/whole.gspy" -- "$prog" > "$work/whole.out" 2>&1 || { cat "$work/whole.out"; exit 1; }
"$gpuspy" report --format json "$work/cut.gspy" > "$work/cut.json" && "$gpuspy" report --format json "$work/whole.gspy" > "$work/whole.json" || exit 1
python3 - "$work/cut.json" "$work/whole.json" <<'PY'
import json, sys
cut, whole = (json.load(open(p)) for p in sys.argv[1:3])
marked = [s["label"] for s in cut["callsites"] if "stack cut at 8 frames inside the library" in s["label"]]
if not marked:
    sys.exit("stack_cut.sh: FAIL: no site of the depth-8 capture says its stack was cut: " + "; ".join(s["label"] for s in cut["callsites"]))
if any("GPUSPY_STACK_DEPTH" not in l for l in marked):
    sys.exit("stack_cut.sh: FAIL: a cut site does not say how to reach the caller")
wrong = [s["label"] for s in whole["callsites"] if "stack cut" in s["label"]]
if wrong:
    sys.exit("stack_cut.sh: FAIL: at the default depth, sites say their stack was cut: " + "; ".join(wrong))
print(f"stack_cut.sh: ok: {len(marked)} cut site(s) at depth 8, none at the default depth")
PY
