#!/usr/bin/env bash
# tests/report/stack_cut.sh: a stack that ends inside a library at the depth budget (issue 28).
# cublas_gemm recorded with --stack-depth 8:
# - with GPUSPY_STACK_DEEPEN=0 its sites inside cuBLAS have their caller beyond the budget, and their labels
#   say the stack was cut there and how to reach the caller;
# - with the defaults the shim retakes such a stack deeper (GPUSPY_STACK_DEEPEN): no site says it was cut,
#   and every site (but the library's own threads' and exit handlers') is at a line of the user's file;
# - at the default depth every site of the main thread reaches main and none says so.
# usage: stack_cut.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 2
GPUSPY_STACK_DEEPEN=0 "$gpuspy" record --sim --stack-depth 8 -f -o "$work/cut.gspy" -- "$prog" > "$work/cut.out" 2>&1 || { cat "$work/cut.out"; exit 1; }
"$gpuspy" record --sim --stack-depth 8 -f -o "$work/deep.gspy" -- "$prog" > "$work/deep.out" 2>&1 || { cat "$work/deep.out"; exit 1; }
"$gpuspy" record --sim -f -o "$work/whole.gspy" -- "$prog" > "$work/whole.out" 2>&1 || { cat "$work/whole.out"; exit 1; }
for c in cut deep whole; do "$gpuspy" report --format json "$work/$c.gspy" > "$work/$c.json" || exit 1; done
python3 - "$work/cut.json" "$work/deep.json" "$work/whole.json" "$(basename "$prog")" <<'PY'
import json, sys
cut, deep, whole = (json.load(open(p)) for p in sys.argv[1:4])
src = sys.argv[4] + ".cu"
marked = [s for s in cut["callsites"] if "stack cut at 8 frames inside the library" in s["label"]]
if not marked:
    sys.exit("stack_cut.sh: FAIL: no site of the depth-8 capture (deepening off) says its stack was cut: " + "; ".join(s["label"] for s in cut["callsites"]))
if any("GPUSPY_STACK_DEPTH" not in s["label"] for s in marked):
    sys.exit("stack_cut.sh: FAIL: a cut site does not say how to reach the caller")
for name, rep in (("deepened depth-8", deep), ("default depth", whole)):
    wrong = [s["label"] for s in rep["callsites"] if "stack cut" in s["label"]]
    if wrong:
        sys.exit(f"stack_cut.sh: FAIL: at the {name}, sites say their stack was cut: " + "; ".join(wrong))
# The calls the cut sites held (by API) are all at sites in the user's file once deepened, as at the default depth.
# Once deepened, as at the default depth, every site but a library's own (its threads, its exit handlers)
# is at a line of the user's file: the calls the cut sites held reached main.
cut_calls = sum(s["count"] for s in marked)
for name, rep in (("deepened depth-8", deep), ("default depth", whole)):
    elsewhere = [f'{s["label"]} ({s["count"]} calls)' for s in rep["callsites"] if not s["library_own"] and src not in s["label"]]
    if elsewhere:
        sys.exit(f"stack_cut.sh: FAIL: at the {name}, sites not in {src}: " + "; ".join(elsewhere))
print(f"stack_cut.sh: ok: {len(marked)} cut site(s) at depth 8 without deepening ({cut_calls} calls), all in {src} once deepened; none cut at the default depth")
PY
