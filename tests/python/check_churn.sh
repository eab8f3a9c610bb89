#!/usr/bin/env bash
# tests/python/check_churn.sh: records cuda_copies.py churn N (N functions compiled, called once and
# freed, one after another: code objects at reused addresses) and checks that the folded export (weight:
# calls) has each function's own line, once: "churned (churn.py:K)" for K = 2..N+1, weight 1 each.
# Usage: check_churn.sh GPUSPY PYTHON RUNDIR N
set -uo pipefail
gpuspy=$1 python=$2 run=$3 n=$4
rm -rf "$run" && mkdir -p "$run"
"$gpuspy" record --sim -o "$run/capture.gspy" -f -- "$python" "$(dirname "$0")/cuda_copies.py" churn "$n" > "$run/record.out" 2>&1 ||
    { echo "check_churn.sh: FAIL: the recorded run failed" >&2; cat "$run/record.out" >&2; exit 1; }
"$gpuspy" export "$run/capture.gspy" --format folded --metric calls -o "$run/calls.folded" -f || exit 2
got=$(grep -o 'churned (churn.py:[0-9]*);.* [0-9]*$' "$run/calls.folded" | grep cudaStreamQuery |
      sed -E 's/^churned \(churn.py:([0-9]+)\).* ([0-9]+)$/\1 \2/' | sort -n)
want=$(seq 2 $((n + 1)) | sed 's/$/ 1/')
if [[ "$got" != "$want" ]]; then
    echo "check_churn.sh: FAIL: the folded export's churned lines and counts differ from 2..$((n + 1)), once each" >&2
    diff <(echo "$want") <(echo "$got") | head -20 >&2
    exit 1
fi
echo "check_churn.sh: PASSED: $n churned functions, each at its own line"
