#!/usr/bin/env bash
# tests/collector/diff_test.sh: `gpuspy diff` end to end on the simulated GPU. Two runs of one program
# (tiny_kernels with 100 and with 40000 launches) show the launches, the kernel and its call site
# changed, matched across the two captures; a bad/fixed pair (pageable_sync_copies, pinned_async_overlap)
# shows its findings resolved and its transfer kinds gone and new; a capture against itself shows no
# change; --fail-if-slower trips on the slower one only (the two differ 400-fold in work, far more than
# a busy machine can turn round); bad input is one line and exit status 2.
# usage: diff_test.sh GPUSPY APPS_DIR
set -uo pipefail
cli=$1 apps=$2
source "$(dirname "${BASH_SOURCE[0]}")/script_checks.sh"

for run in "few 100" "many 40000"; do
    set -- $run
    "$cli" record --sim -f -o "$1.gspy" -- "$apps/tiny_kernels.static" "$2" >/dev/null 2>"$1.err" ||
        { echo "record $1 failed"; cat "$1.err"; exit 1; }
done
"$cli" record --sim -f -o pageable.gspy -- "$apps/pageable_sync_copies.static" >/dev/null 2>rec.err ||
    { echo "record pageable failed"; cat rec.err; exit 1; }
"$cli" record --sim -f -o pinned.gspy -- "$apps/pinned_async_overlap.static" >/dev/null 2>rec.err ||
    { echo "record pinned failed"; cat rec.err; exit 1; }

# Two launch counts of one program: matched by kernel name and by call-site frame, not by ids.
expect 0 "$cli" diff few.gspy many.gspy
has out '^  kernel launches +100 +40000 +\+39900'
has out '^  tiny_add\(int\*\) +100 -> 40000 '
has out '^  launch +main \(tiny_kernels\.cu:[0-9]+\) +100 -> 40000 '
has out '^B is [0-9.]+% slower than A \(wall\)'
has out '^  GPU busy +A [0-9.]+%'
expect 0 "$cli" diff --format json few.gspy many.gspy
python3 - out <<'PY' || bad "JSON of few vs many"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuspy.diff/1" and d["changed"] is True, d["changed"]
assert d["headline"]["launches"] == {"a": 100, "b": 40000, "delta": 39900, "change_pct": 39900.0}, d["headline"]["launches"]
for side in "ab":
    assert d["headline"]["gpu_busy"][side]["busy_basis"] in ("measured", "upper_bound", "estimated")
k = [k for k in d["kernels"] if k["name"] == "tiny_add(int*)"]
assert len(k) == 1 and k[0]["in_a"] and k[0]["in_b"] and k[0]["launches"]["b"] == 40000, k
sites = [c for c in d["callsites"] if c["category"] == "launch"]
assert len(sites) == 1 and sites[0]["in_a"] and sites[0]["in_b"], sites
assert len(d["processes"]) == 1 and d["processes"][0]["in_a"] and d["processes"][0]["in_b"], d["processes"]
PY

# A capture against itself: no change, and the gate does not trip even at 0%.
expect 0 "$cli" diff few.gspy few.gspy --fail-if-slower 0
has out '^no change: the two captures have the same figures$'
expect 0 "$cli" diff --format json many.gspy many.gspy
python3 -c 'import json,sys; d=json.load(open("out")); assert d["changed"] is False and d["headline"]["wall_ns"]["delta"] == 0' ||
    bad "JSON of a capture against itself"

# The regression gate: B slower by more than PERCENT is exit status 1, after the comparison.
expect 1 "$cli" diff few.gspy many.gspy --fail-if-slower 50
has out '^gpuspy diff$'
has err '^gpuspy diff: B is [0-9.]+% slower than A \(wall .* ms -> .* ms\), more than the 50% allowed$'
expect 0 "$cli" diff many.gspy few.gspy --fail-if-slower 50

# A bad/fixed pair: the fix resolves the finding, the transfer kinds change.
expect 0 "$cli" diff pageable.gspy pinned.gspy
has out '^  resolved +pageable-memcpy '
has out '^  HtoD pageable sync +100 +- '
has out '^  HtoD pinned async +- +[0-9]+ '
has out 'B ran .*pinned_async_overlap\.static'

# Bad input: one line, exit status 2.
"$cli" record --sim -f -o none.gspy -- /bin/true >/dev/null 2>&1
echo "not a capture at all, only some text long enough for a header" > garbage.gspy
head -c 200 many.gspy > cut.gspy
for input in "nope.gspy:cannot open" "garbage.gspy:not a gpuspy capture" "none.gspy:holds no process" "cut.gspy:truncated"; do
    file=${input%%:*} why=${input#*:}
    expect 2 "$cli" diff few.gspy "$file"
    [ "$(wc -l < err)" -eq 1 ] || bad "$file: $(wc -l < err) lines on stderr"
    has err "^gpuspy diff: $file: .*$why"
    [ ! -s out ] || bad "$file: output on stdout"
done

[ $fail -eq 0 ] && echo "gpuspy diff: all checks passed"
exit $fail
