#!/usr/bin/env bash
# tests/collector/repeat_test.sh: `gpuspy record --repeat N` end to end on the simulated GPU. Three runs of
# tiny_kernels go into one capture (three processes, a Run each); the report tables are the median run's
# and a Runs section gives every figure's median [min - max] over the runs, the JSON a runs array and a
# spread object. A deliberately noisy command (each run launches another number of kernels: 200, 40000,
# 2000) has its launch count marked WIDE; diff of a repeated capture with itself shows no change; diff of
# the noisy capture against a steady one calls the launch change noise and the regression gate does not
# trip on it, while 40000 launches against 2000 are "higher" beyond the noise (a rank test and Welch's t-test
# over the runs decide: collector/compare/significance.h). Only counts and ranges are
# asserted, never a time: the noise test's ranges overlap by construction (200 and 40000 launches
# bracket 2000). `gpuspy view --diff` writes the comparison page. The command's exit status passes through.
# usage: repeat_test.sh GPUSPY APPS_DIR
set -uo pipefail
cli=$1 apps=$2
source "$(dirname "${BASH_SOURCE[0]}")/script_checks.sh"
# 50 us kernels: a 2000-launch run spends ~100 ms on the device, a 200-launch one ~10 ms, so that the noisy
# capture's shortest run stays shorter than the steady ones on a loaded machine (the wall verdict below
# asks that the two captures' wall ranges overlap; with 2 us kernels process start-up was most of a run).
export SIMCUDA_KERNEL_NS=tiny_add=50000

expect 0 "$cli" record --sim --repeat 3 -f -o steady.gspy -- "$apps/tiny_kernels.static" 2000
has err 'wrote steady\.gspy: 3 process\(es\)'
has out '^Runs \(3 runs of the command; the tables above are run [123].s, the run of median wall time\)$'
has out '^    kernel launches +2000 \[2000 - 2000\]  ±0%$'
has out '^    tiny_add\(int\*\) '
expect 0 "$cli" report --format json steady.gspy
python3 - out <<'PY' || bad "JSON runs of the steady capture"
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"]
assert [r["run"] for r in runs] == [0, 1, 2], runs
assert len({r["pids"][0] for r in runs}) == 3 and all(len(r["pids"]) == 1 for r in runs), runs
assert all(r["exit_status"] == 0 and r["headline"]["launches"] == 2000 for r in runs), runs
assert d["median_run"] in (0, 1, 2)
walls = sorted(r["headline"]["wall_ns"] for r in runs)
head = {s["name"]: s for s in d["spread"]["headline"]}
assert head["wall_ns"]["median"] == walls[1] and head["wall_ns"]["min"] == walls[0] and head["wall_ns"]["max"] == walls[2], head
assert head["launches"] == {"name": "launches", "median": 2000, "min": 2000, "max": 2000, "runs": 3,
                            "spread_pct": 0.0, "wide": False}, head["launches"]
# The tables are the median run's: its one process.
assert [p["pid"] for p in d["processes"]] == runs[d["median_run"]]["pids"], d["processes"]
assert any("3 runs of the command" in n for n in d["notes"]), d["notes"]
PY

# A noisy command: each run launches another number of kernels.
cat > noisy.sh <<SH
#!/usr/bin/env bash
n=\$(cat count 2>/dev/null || echo 0); echo \$((n + 1)) > count
counts=(200 40000 2000)
exec "$apps/tiny_kernels.static" \${counts[\$n]}
SH
chmod +x noisy.sh
expect 0 "$cli" record --sim --repeat 3 -f -o noisy.gspy -- ./noisy.sh
has out '^    kernel launches +2000 \[200 - 40000\]  ±[0-9]+%  WIDE: do not trust$'

# A repeated capture against itself: no change.
expect 0 "$cli" diff steady.gspy steady.gspy --fail-if-slower 0
has out '^no change: the two captures have the same figures$'
# The noisy runs bracket the steady ones: noise, and the gate does not trip on it.
expect 0 "$cli" diff steady.gspy noisy.gspy --fail-if-slower 0
has out '^over the runs \(A 3 runs, B 3 runs\)'
has out '^  kernel launches .* noise$'
has out '^  wall .* noise$'
has out '\(wall\): noise, the runs cannot tell the two apart$'
# Twenty times the launches in every run: beyond the noise.
expect 0 "$cli" record --sim --repeat 3 -f -o many.gspy -- "$apps/tiny_kernels.static" 40000
expect 0 "$cli" diff --format json steady.gspy many.gspy
python3 - out <<'PY' || bad "JSON of steady vs many"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["runs"] == {"a": 3, "b": 3}, d["runs"]
v = {(s["section"], s["name"]): s for s in d["spread"]}
assert v[("headline", "launches")]["verdict"] == "higher", v[("headline", "launches")]
assert v[("kernels", "tiny_add(int*)")]["verdict"] == "higher", v[("kernels", "tiny_add(int*)")]
PY

# The viewer's diff page: the diff's JSON embedded (every '<' escaped), its renderer in, no marker left.
expect 0 "$cli" view --diff steady.gspy noisy.gspy -o page.html
has err 'wrote page\.html'
python3 - page.html <<'PY' || bad "view --diff page"
import json, re, sys
page = open(sys.argv[1]).read()
assert "@GPUSPY" not in page, "a marker is left"
assert "function diffTables" in page, "the renderer is missing"
m = re.search(r'<script type="application/json" id="gpuspy-diff">(.*?)</script>', page, re.S)
d = json.loads(m.group(1))
assert d["schema"] == "gpuspy.diff/1" and d["runs"] == {"a": 3, "b": 3}, d["runs"]
assert any(s["name"] == "launches" and s["verdict"] == "noise" for s in d["spread"]), d["spread"]
PY
expect 2 "$cli" view --diff steady.gspy
has err 'two captures, please'

# The exit status: the first failing run's (tiny_kernels 0 prints its usage and exits 2).
expect 2 "$cli" record --sim --repeat 2 -f -o fails.gspy -- "$apps/tiny_kernels.static" 0
expect 2 "$cli" record --repeat 0 -- /bin/true
has err 'gpuspy record: --repeat'

[ $fail -eq 0 ] && echo "gpuspy record --repeat: all checks passed"
exit $fail
