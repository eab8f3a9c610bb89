#!/usr/bin/env bash
# tests/python/check_lines.sh: after a report test of tests/python/cuda_copies.py (run_report.sh left its
# capture in RUNDIR), checks the exact Python lines: the report's call sites and the folded export must
# name FUNC at the line of its CUDA call (the line in cuda_copies.py marked "# the pageable copy" inside
# FUNC) and CALLER at the line that calls FUNC; report_vs_trace checked function, file and a line only.
# With OUTER (the copies run on the main thread, under the module's code): the module's frame at its
# main() call too.
# Usage: check_lines.sh GPUSPY RUNDIR FUNC CALLER [OUTER]
set -uo pipefail
gpuspy=$1 run=$2 func=$3 caller=$4 outer=${5:-}
src=$(dirname "$0")/cuda_copies.py

# The line of FUNC's copy: the first "# the pageable copy" after "def FUNC(".
def=$(grep -n "^def $func(" "$src" | cut -d: -f1)
copy=$(awk -v from="$def" 'NR > from && /# the pageable copy/ { print NR; exit }' "$src")
# The line in CALLER that calls FUNC.
cdef=$(grep -n "^def $caller(" "$src" | cut -d: -f1)
call=$(awk -v from="$cdef" -v f="$func(" 'NR > from && index($0, f) { print NR; exit }' "$src")
[[ -n $copy && -n $call ]] || { echo "check_lines.sh: cannot find $func or $caller in $src" >&2; exit 2; }

site="$func (cuda_copies.py:$copy) ← $caller (cuda_copies.py:$call)"
fail=0
"$gpuspy" report "$run/capture.gspy" --format json > "$run/lines.json" || exit 2
if ! grep -qF "\"label\": \"$site\"" "$run/lines.json" && ! grep -qF "\"label\":\"$site\"" "$run/lines.json"; then
    echo "check_lines.sh: FAIL: no call site labelled '$site' in the report" >&2
    grep -o '"label": *"[^"]*"' "$run/lines.json" | sort -u >&2
    fail=1
fi
"$gpuspy" export "$run/capture.gspy" --format folded -o "$run/lines.folded" -f || exit 2
stack="$caller (cuda_copies.py:$call);$func (cuda_copies.py:$copy);"
if ! grep -qF "$stack" "$run/lines.folded"; then
    echo "check_lines.sh: FAIL: the folded export has no stack with '$stack'" >&2
    head -c 2000 "$run/lines.folded" >&2
    fail=1
fi
# The outermost Python frame, far below its code's first line (line 1): the line table's varint form.
main_call=$(grep -n "^    main()$" "$src" | cut -d: -f1)
if [[ -n $outer ]] && ! grep -qF "<module> (cuda_copies.py:$main_call);" "$run/lines.folded"; then
    echo "check_lines.sh: FAIL: the folded export has no '<module> (cuda_copies.py:$main_call)' frame" >&2
    fail=1
fi
# The Perfetto export's call sites: its calls' "site" args are the report's labels, which start with the
# innermost Python frame (and go on with its caller: "to_device (cuda_copies.py:29) ← step (...)").
"$gpuspy" export "$run/capture.gspy" --format perfetto -o "$run/lines.trace.json" -f || exit 2
if ! grep -qF "\"site\":\"$func (cuda_copies.py:$copy)" "$run/lines.trace.json"; then
    echo "check_lines.sh: FAIL: no Perfetto call with site '$func (cuda_copies.py:$copy)'" >&2
    fail=1
fi
[[ $fail -eq 0 ]] && echo "check_lines.sh: PASSED: $site, in the report, the folded and the Perfetto export"
exit $fail
