#!/usr/bin/env bash
# tests/collector/diff_noise_test.sh: diff's verdict over repeated runs (issue 31) held nine times each way.
# One program recorded ten times (record --repeat 6 each) and compared capture to capture: never a change
# beyond noise; against a program whose wall is ~20% longer (1250 launches of a 200 us kernel against 1000:
# walls of ~267 ms against ~217 ms, start-up included), recorded nine times: always "higher" for the wall,
# and `--fail-if-slower 10` trips. The kernels are long beside a loaded host's start-up and launch noise, so
# the verdicts are about the programs, not the load. (1200 launches made walls only ~14% apart, 217 ms
# against 247 ms, and a fresh-clone run beside three parallel builds, load average 10-14, read 3 of 9 such
# pairs as noise.) Captures minutes apart see different loads, and a capture's six runs share theirs: a CI
# run read 2 of 9 same-program pairs as a change (walls 1-2% apart, every run of one side above the
# other's) until diff weighed each run's CPU wait (the host's load, "noise(host_load)").
# usage: diff_noise_test.sh GPUSPY APPS_DIR
set -uo pipefail
cli=$1 apps=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export SIMCUDA_KERNEL_NS=tiny_add=200000
fail=0
for i in $(seq 0 9); do
    "$cli" record --sim --repeat 6 -f -o "$dir/a$i.gspy" -- "$apps/tiny_kernels.static" 1000 >/dev/null 2>"$dir/err" ||
        { cat "$dir/err"; echo "FAIL: record a$i"; exit 1; }
    [ "$i" -lt 9 ] || continue
    "$cli" record --sim --repeat 6 -f -o "$dir/b$i.gspy" -- "$apps/tiny_kernels.static" 1250 >/dev/null 2>"$dir/err" ||
        { cat "$dir/err"; echo "FAIL: record b$i"; exit 1; }
done
wall_verdict() {
    "$cli" diff --format json "$1" "$2" | python3 -c '
import json, sys
d = json.load(sys.stdin)
w = next((s for s in d["spread"] if s["section"] == "headline" and s["name"] == "wall_ns"), None)
print("none" if w is None else w["verdict"] + ("(" + w["why"] + ")" if "why" in w else ""))'
}
for i in $(seq 0 8); do
    same=$(wall_verdict "$dir/a$i.gspy" "$dir/a$((i + 1)).gspy")
    case $same in
    noise | noise\(host_load\) | too_few) echo "ok   same program, captures $i and $((i + 1)): $same" ;;
    *) echo "FAIL same program, captures $i and $((i + 1)): $same (a change where there is none)"; fail=1 ;;
    esac
    more=$(wall_verdict "$dir/a$i.gspy" "$dir/b$i.gspy")
    if [ "$more" = higher ]; then echo "ok   20% longer wall, pair $i: higher"
    else echo "FAIL 20% longer wall, pair $i: $more (expected higher)"; fail=1; fi
done
if "$cli" diff "$dir/a0.gspy" "$dir/b0.gspy" --fail-if-slower 10 >/dev/null 2>"$dir/gate"; then
    echo "FAIL: --fail-if-slower 10 did not trip on a 20% longer wall: $(cat "$dir/gate")"; fail=1
else
    echo "ok   --fail-if-slower 10 trips: $(cat "$dir/gate")"
fi
exit $fail
