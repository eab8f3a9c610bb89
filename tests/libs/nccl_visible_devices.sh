#!/usr/bin/env bash
# tests/libs/nccl_visible_devices.sh: NCCL in one process (nccl_straggler: ncclCommInitAll over devices 0..3, a
# thread per rank) with CUDA_VISIBLE_DEVICES=5,4,3,2 of 6 simulated devices. NCCL must initialise over the 4 GPUs
# it sees (distinct bus ids), and the simulated driver couples the ranks by the ordinals the process uses
# (tests/simcuda/src/collectives.cpp). Checked in the trace: the NCCL kernels of ordinal d ran on physical device
# 5-d ("dev" d, "pdev" 5-d), each ordinal has the same number, and every collective is coupled as a GPU couples it:
# each rank's kernel ends 300 us after the last rank's start, its peer_wait that start less its own.
# usage: nccl_visible_devices.sh NCCL_STRAGGLER WORKDIR
set -uo pipefail
prog=$1 work=$2
rm -rf "$work" && mkdir -p "$work" || exit 2
SIMCUDA_DEVICES=6 CUDA_VISIBLE_DEVICES=5,4,3,2 SIMCUDA_NCCL_RANKS=4 NCCL_SOCKET_IFNAME=lo \
    SIMCUDA_KERNEL_NS=ncclDevKernel=300000 SIMCUDA_TRACE="$work/trace.jsonl" "$prog" even 3 > "$work/out" 2>&1 \
    || { cat "$work/out"; exit 1; }
python3 - "$work/trace.jsonl" <<'PY'
import json, sys
ks = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") == "op" and e.get("op") == "kernel" and "ncclDevKernel" in e.get("name", ""):
        ks.setdefault(e["dev"], []).append(e)
results = []
check = lambda ok, what: results.append((bool(ok), what))
pairs = sorted({(e["dev"], e["pdev"]) for k in ks.values() for e in k})
check(pairs == [(0, 5), (1, 4), (2, 3), (3, 2)], f"ordinals 0..3 on physical devices 5..2 ({pairs})")
counts = {d: len(k) for d, k in ks.items()}
check(len(counts) == 4 and len(set(counts.values())) == 1 and min(counts.values()) > 0, f"as many NCCL kernels on each ({counts})")
bad = []
if len(counts) == 4 and len(set(counts.values())) == 1:
    for d in ks:
        ks[d].sort(key=lambda e: e["start"])
    for i in range(counts[0]):
        last = max(ks[d][i]["start"] for d in range(4))
        if any(ks[d][i]["end"] != last + 300000 or ks[d][i].get("peer_wait") != last - ks[d][i]["start"] for d in range(4)):
            bad.append(i)
check(len(counts) == 4 and not bad, f"every collective coupled: ends 300 us after the last rank's start, peer_wait the difference (off: {bad})")
for ok, what in results:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for ok, _ in results) else 1)
PY
