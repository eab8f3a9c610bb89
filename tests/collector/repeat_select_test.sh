#!/usr/bin/env bash
# tests/collector/repeat_select_test.sh: one run of a repeated capture (`record --repeat 3`) in report,
# export and view (`--run K`), and the merged output saying it is the runs merged. Each run of the
# command launches another number of kernels (200, 600, 400), so the launch count names the run shown:
# report --run K and export --run K hold run K's alone; without --run the csv's first line says which run
# (report: the median run's tables) or that the runs are merged (export), the perfetto process names and
# the folded stacks' root frames carry each process's run, the viewer's page a note and the labels. A
# run the capture lacks is an error. Only counts and labels are asserted, never a time.
# usage: repeat_select_test.sh GPUSPY APPS_DIR
set -uo pipefail
cli=$1 apps=$2
source "$(dirname "${BASH_SOURCE[0]}")/script_checks.sh"
export SIMCUDA_KERNEL_NS=tiny_add=2000

cat > runs.sh <<SH
#!/usr/bin/env bash
n=\$(cat count 2>/dev/null || echo 0); echo \$((n + 1)) > count
counts=(200 600 400)
exec "$apps/tiny_kernels.static" \${counts[\$n]}
SH
chmod +x runs.sh
expect 0 "$cli" record --sim --repeat 3 -f -o runs.gspy -- ./runs.sh
has err 'wrote runs\.gspy: 3 process\(es\)'

# report --run K: run K's processes alone, in every format.
launches() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(k["count"] for k in d["kernels"]), len(d["processes"]))' "$1"; }
for k in 1 2 3; do
    expect 0 "$cli" report --run $k --format json runs.gspy
    want=$(echo "200 600 400" | cut -d' ' -f$k)
    [ "$(launches out)" = "$want 1" ] || bad "report --run $k: launches and processes $(launches out), not $want 1"
    has out "this report is run $k's \(--run\)"
done
expect 0 "$cli" report --run 2 runs.gspy
has out '^ Launches: 600 \('
lacks out '^Runs \('
expect 0 "$cli" report --run 3 --format csv runs.gspy
has out "^# the capture holds 3 runs of the command \(record --repeat\): these tables are run 3's$"
# Without --run the csv says whose tables they are: the median run's.
expect 0 "$cli" report --format csv runs.gspy
head -1 out > first
has first "^# the capture holds 3 runs of the command \(record --repeat\): these tables are run 3's, the run of median wall time; --run K for another$|^# the capture holds 3 runs .* run [12]'s, the run of median wall time"
expect 1 "$cli" report --run 4 runs.gspy
has err 'runs\.gspy.*--run 4: the capture holds runs 1 to 3|--run 4: the capture holds runs 1 to 3'
expect 2 "$cli" report --run 0 runs.gspy

# export: merged by default, labelled; --run K alone.
expect 0 "$cli" export runs.gspy --format csv -o merged.csv
head -1 merged.csv > first
has first '^# the capture holds 3 runs of the command \(record --repeat\), merged here'
expect 0 "$cli" export runs.gspy --format json -o merged.json
[ "$(launches merged.json)" = "1200 3" ] || bad "export json merged: $(launches merged.json), not 1200 3"
has merged.json 'runs of the command \(record --repeat\), merged here'
expect 0 "$cli" export runs.gspy --format json --run 2 -o two.json
[ "$(launches two.json)" = "600 1" ] || bad "export json --run 2: $(launches two.json), not 600 1"
lacks two.json 'merged here'
expect 0 "$cli" export runs.gspy --format perfetto -o merged.trace.json
python3 - merged.trace.json <<'PY' || bad "perfetto process names of the merged runs"
import json, re, sys
names = [e["args"]["name"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("name") == "process_name"]
runs = sorted(re.search(r", run (\d)\)$", n).group(1) for n in names)
assert runs == ["1", "2", "3"], names
PY
expect 0 "$cli" export runs.gspy --format perfetto --run 2 -o two.trace.json
python3 - two.trace.json <<'PY' || bad "perfetto of --run 2"
import json, sys
names = [e["args"]["name"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("name") == "process_name"]
assert len(names) == 1 and "run" not in names[0], names
PY
expect 0 "$cli" export runs.gspy --format folded --metric calls -o merged.folded
for k in 1 2 3; do has merged.folded "^run $k;"; done
lacks merged.folded '^[^r]'
expect 0 "$cli" export runs.gspy --format folded --metric calls --run 1 -o one.folded
lacks one.folded '^run [0-9];'
[ -s one.folded ] || bad "export folded --run 1 is empty"
expect 1 "$cli" export runs.gspy --format folded --run 5 -o five.folded
has err '--run 5: the capture holds runs 1 to 3'

# view: the merged page says so and labels the processes; --run K shows run K's alone.
expect 0 "$cli" view runs.gspy -o merged.html
has merged.html 'runs of the command \(record --repeat\), merged here'
has merged.html ', run 3\)'
expect 0 "$cli" view runs.gspy --run 3 -o three.html
lacks three.html 'runs of the command \(record --repeat\), merged here'
lacks three.html ', run [0-9]\)'
expect 1 "$cli" view runs.gspy --run 7 -o seven.html
has err '--run 7: the capture holds runs 1 to 3'
expect 2 "$cli" view --diff runs.gspy runs.gspy --run 1
has err 'not with --diff'

# A capture of one run is its own run 1, and has no other.
expect 0 "$cli" record --sim -f -o one.gspy -- "$apps/tiny_kernels.static" 300
expect 0 "$cli" report --run 1 --format json one.gspy
[ "$(launches out)" = "300 1" ] || bad "report --run 1 of a single run: $(launches out)"
expect 1 "$cli" report --run 2 one.gspy
has err 'the capture holds one run'
expect 0 "$cli" export one.gspy --format csv -o one.csv
lacks one.csv '^# the capture holds'

[ $fail -eq 0 ] && echo "--run K and merged runs: all checks passed"
exit $fail
