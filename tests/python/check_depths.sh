#!/usr/bin/env bash
# tests/python/check_depths.sh: records cuda_copies.py depths N (a query from 0 to 3 levels of map()
# re-entry in turn: the native depth to the outermost Python frame changes from one call to the next,
# and on 3.11+ the 3-level one passes the 24-frame capture) twice, with the per-thread native depth hint
# (GPUSPY_PYTHON_HINT, the default) and without it (every stack unwound to the full depth), and checks
# that the folded exports (weight: calls) are the same stacks with the same counts: four query stacks,
# N/4 calls each, each rooted at the module's own frame (no interpreter start-up frame outward of it).
# Usage: check_depths.sh GPUSPY PYTHON RUNDIR N   (N a multiple of 4)
set -uo pipefail
gpuspy=$1 python=$2 run=$3 n=$4
rm -rf "$run" && mkdir -p "$run"
src=$(dirname "$0")/cuda_copies.py
for hint in 1 0; do
    GPUSPY_PYTHON_HINT=$hint "$gpuspy" record --sim -o "$run/hint$hint.gspy" -f -- "$python" "$src" depths "$n" \
        > "$run/record$hint.out" 2>&1 || { echo "check_depths.sh: FAIL: the recorded run failed" >&2; cat "$run/record$hint.out" >&2; exit 1; }
    "$gpuspy" export "$run/hint$hint.gspy" --format folded --metric calls -o "$run/hint$hint.folded" -f > /dev/null || exit 2
    grep -F 'query (cuda_copies.py:' "$run/hint$hint.folded" | sort > "$run/queries$hint.txt"
done
fail=0
if ! diff "$run/queries0.txt" "$run/queries1.txt" > "$run/diff.txt"; then
    echo "check_depths.sh: FAIL: the query stacks differ with and without the depth hint" >&2
    head -c 4000 "$run/diff.txt" >&2
    fail=1
fi
main_call=$(grep -n "^    main()$" "$src" | cut -d: -f1)
stacks=$(wc -l < "$run/queries1.txt")
rooted=$(grep -c "^<module> (cuda_copies.py:$main_call);main (cuda_copies.py:[0-9]*);run_depths (cuda_copies.py:[0-9]*);" "$run/queries1.txt")
counts=$(awk '{ print $NF }' "$run/queries1.txt" | sort -u | tr '\n' ' ')
for levels in 0 1 2 3; do
    lambdas=$(awk -v k="$levels" '{ if (gsub(/<lambda>/, "&") == k) c++ } END { print c + 0 }' "$run/queries1.txt")
    [[ $lambdas -eq 1 ]] || { echo "check_depths.sh: FAIL: $lambdas query stacks with $levels map() levels (want 1)" >&2; fail=1; }
done
if [[ $stacks -ne 4 || $rooted -ne 4 || "$counts" != "$((n / 4)) " ]]; then
    echo "check_depths.sh: FAIL: want 4 query stacks rooted at <module> (cuda_copies.py:$main_call), $((n / 4)) calls each;" \
         "got $stacks stacks, $rooted rooted there, counts: $counts" >&2
    cat "$run/queries1.txt" >&2
    fail=1
fi
[[ $fail -eq 0 ]] && echo "check_depths.sh: PASSED: 4 query stacks of $((n / 4)) calls, the same with and without the depth hint"
exit $fail
