#!/usr/bin/env bash
# tests/report/idle_server.sh: a server waiting for requests is not starved (issue 31). tests/apps/idle_server
# idle blocks in poll() for 40 ms between 8 requests: the report counts those pauses as waiting for work
# (each device's waiting_for_work_ns at least 5 of the 7 pauses), never as starvation, fires no gpu-starved
# finding and says so in the verdict; `idle_server busy` computes on the CPU for those 40 ms instead: that is
# starvation (gpu-starved fires), and not waiting.
# usage: idle_server.sh GPUSPY PROGRAM WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 2
rc=0
for mode in idle busy; do
    "$gpuspy" record --sim -f -o "$work/$mode.gspy" -- "$prog" "$mode" > "$work/$mode.out" 2>&1 ||
        { cat "$work/$mode.out" >&2; echo "idle_server.sh: FAIL: record $mode" >&2; exit 1; }
    "$gpuspy" report --format json "$work/$mode.gspy" > "$work/$mode.json" && "$gpuspy" report "$work/$mode.gspy" > "$work/$mode.txt" ||
        { echo "idle_server.sh: FAIL: report $mode" >&2; exit 1; }
    python3 - "$mode" "$work/$mode.out" "$work/$mode.json" "$work/$mode.txt" <<'PY' || rc=1
import json, re, sys
mode, out, rep, txt = sys.argv[1], open(sys.argv[2]).read(), json.load(open(sys.argv[3])), open(sys.argv[4]).read()
truth = dict(kv.split("=") for kv in re.search(r"^truth idle_server (.*)$", out, re.M).group(1).split())
pauses = (int(truth["requests"]) - 1) * int(truth["pause_ns"])
dev = rep["devices"][0]
rules = {f["rule"] for f in rep["findings"]}
ok = True
def check(c, what):
    global ok
    print(("ok   " if c else "FAIL ") + f"{mode}: {what}")
    ok &= bool(c)
if mode == "idle":
    check(dev["waiting_for_work_ns"] >= pauses * 5 // 7, f"waiting for work {dev['waiting_for_work_ns']} ns of the {pauses} ns of pauses")
    check(dev["starved_ns"] < pauses // 7, f"starved only {dev['starved_ns']} ns (under one pause)")
    check("gpu-starved" not in rules, f"no gpu-starved finding ({sorted(rules)})")
    check("Waiting for work:" in txt, "the verdict says the program waited for work")
else:
    check(dev["waiting_for_work_ns"] < pauses // 7, f"computing between requests is not waiting ({dev['waiting_for_work_ns']} ns)")
    check("gpu-starved" in rules, f"gpu-starved fires when the CPU prepares the batches ({sorted(rules)})")
sys.exit(0 if ok else 1)
PY
done
[[ $rc -ne 0 ]] && echo "idle_server.sh: files in $work" >&2
exit $rc
