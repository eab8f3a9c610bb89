#!/usr/bin/env bash
# tests/report/tp_visible_devices.sh: the tensor-parallel job of tp_stragglers.sh launched as Slurm's gres, vLLM and
# other launchers give each rank its GPU: tp_launch sets CUDA_VISIBLE_DEVICES=<local rank> in each rank
# (TP_VISIBLE_DEVICES=1) and nccl_tp uses device 0. The simulated driver renumbers the devices as a real one does
# (tests/simcuda/src/visible_devices.cpp) and couples the NCCL kernels by physical device, so every check of
# tp_stragglers.sh must pass as before (NCCL initialises over 4 distinct GPUs, the collectives couple, the
# straggler is rank 2; tp_checks.py takes each process's GPU from the trace's "pdev"). Then, against the traces:
# every rank's every line is its device 0 ("dev") on physical device RANK ("pdev"); and in gpuspy's report each
# rank's process has one device, id 0, whose UUID and name are that physical device's, 4 distinct UUIDs in all.
# usage: tp_visible_devices.sh GPUSPY TP_LAUNCH NCCL_TP WORKDIR
set -uo pipefail
gpuspy=$1 launch=$2 prog=$3 work=$4
here=$(dirname "$0")
TP_VISIBLE_DEVICES=1 bash "$here/tp_stragglers.sh" "$gpuspy" "$launch" "$prog" "$work" || exit 1
python3 - "$work" <<'PY'
import glob, json, sys
work = sys.argv[1]
results = []
check = lambda ok, what: results.append((bool(ok), what))
for mode in ("late", "even"):
    phys = {}  # pid -> the physical devices its trace lines name; and the ordinals they use
    used = {}
    for path in glob.glob(f"{work}/trace.{mode}/*.jsonl"):
        for line in open(path):
            e = json.loads(line)
            if e.get("type") in ("op", "wait", "graph_event"):
                phys.setdefault(e["pid"], set()).add(e.get("pdev"))
                used.setdefault(e["pid"], set()).add(e.get("dev"))
    check(len(phys) == 4 and all(u == {0} for u in used.values()),
          f"{mode}: 4 processes, each using only its device 0 ({ {p: sorted(u) for p, u in used.items()} })")
    check(all(len(s) == 1 for s in phys.values()) and sorted(next(iter(s)) for s in phys.values()) == [0, 1, 2, 3],
          f"{mode}: each process on a physical device of its own, 0..3 ({ {p: sorted(s, key=str) for p, s in phys.items()} })")
    r = json.load(open(f"{work}/{mode}.json"))
    ranks = {c["pid"]: c["rank"] for c in r["collectives"]}
    devs = [d for d in r["devices"] if d["pid"] in phys]
    check(len(devs) == 4 and all(d["id"] == 0 for d in devs),
          f"{mode}: the report has one device per rank, each its process's device 0 ({[(d['pid'], d['id']) for d in devs]})")
    uuids = {d["uuid"] for d in devs}
    check(len(uuids) == 4, f"{mode}: 4 distinct device UUIDs in the report ({sorted(uuids)})")
    for d in devs:
        p = next(iter(phys[d["pid"]]))
        want = f"GPU-5c1dc0da-6770-7573-7079-0000000013{p:02x}"
        check(d["uuid"] == want and d["name"] == f"gpuspy simulated GPU {p}" and ranks.get(d["pid"]) == p,
              f"{mode}: pid {d['pid']} (rank {ranks.get(d['pid'])}): {d['name']!r} {d['uuid']}, physical device {p} ({want})")
for ok, what in results:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if results and all(ok for ok, _ in results) else 1)
PY
