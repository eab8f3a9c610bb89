#!/usr/bin/env bash
# tests/report/collectives.sh: NCCL's collectives as gpuspy reports them (issue 29), through NCCL's profiler
# plugin, which the shim provides with nothing set. nccl_collectives drives 4 simulated devices from one
# process: per step a group of all-reduce + all-gather + reduce-scatter on every rank (one fused kernel per
# rank), a send/recv ring, and one broadcast at the end. Checked against the program's own sizes and the
# simulated driver's trace: every operation of every rank with its bytes, matched to the kernel that
# carried it, that kernel's device time (split over the fused operations by bytes, so the fused rows of a
# rank add up to its kernels' time), each rank's wait for the last rank to start (the simulated driver
# couples the ranks' kernels, SIMCUDA_NCCL_RANKS, and traces each one's wait), the user's call sites; and a plugin the user chose is never overridden.
# usage: collectives.sh GPUSPY NCCL_COLLECTIVES WORKDIR
set -uo pipefail
gpuspy=$1 prog=$2 work=$3
rm -rf "$work" && mkdir -p "$work/trace" || exit 2
steps=6
# SIMCUDA_NCCL_RANKS: the simulated driver couples each collective's kernels across the 4 devices (a rank's
# kernel ends its own duration after the last rank's started) and traces each one's wait (peer_wait).
export SIMCUDA_DEVICES=4 NCCL_SOCKET_IFNAME=lo SIMCUDA_NCCL_RANKS=4
export SIMCUDA_KERNEL_NS=ncclDevKernel_AllGather=1000000,ncclDevKernel_SendRecv=300000,ncclDevKernel_Broadcast=400000
SIMCUDA_TRACE="$work/trace/%p.jsonl" "$gpuspy" record --sim -f -o "$work/c.gspy" -- "$prog" $steps > "$work/record.out" 2>&1 ||
    { cat "$work/record.out"; exit 1; }
"$gpuspy" report --format json "$work/c.gspy" > "$work/c.json" && "$gpuspy" report --width 160 "$work/c.gspy" > "$work/c.txt" || exit 1
# A plugin the user chose (here one NCCL cannot find: it goes on without one) is left alone.
NCCL_PROFILER_PLUGIN=/nonexistent/libnccl-profiler-mine.so "$gpuspy" record --sim -f -o "$work/mine.gspy" -- "$prog" 1 \
    > "$work/mine.out" 2>&1 || { cat "$work/mine.out"; exit 1; }
"$gpuspy" report --format json "$work/mine.gspy" > "$work/mine.json" || exit 1
python3 - "$work" "$steps" <<'PY'
import glob, json, re, sys
work, steps = sys.argv[1], int(sys.argv[2])
r = json.load(open(f"{work}/c.json"))
results = []
check = lambda ok, what: results.append((bool(ok), what))
ranks = 4
# The program's sizes (nccl_collectives.cu), as nccl-tests counts a message: an all-gather's and a
# reduce-scatter's is every rank's part.
sizes = {"AllReduce": (1 << 18) * 4, "AllGather": (1 << 14) * 4 * ranks, "ReduceScatter": (1 << 15) * 4 * ranks,
         "Send": (1 << 12) * 4, "Recv": (1 << 12) * 4, "Broadcast": (1 << 16) * 4}
calls = {op: (1 if op == "Broadcast" else steps) for op in sizes}
rows = {(c["rank"], c["op"]): c for c in r["collectives"]}
check(len({c["comm_id"] for c in r["collectives"]}) == 1, "one communicator")
for rank in range(ranks):
    for op, size in sizes.items():
        c = rows.get((rank, op))
        check(c is not None, f"rank {rank} {op}: a row")
        if not c:
            continue
        check(c["nranks"] == ranks and c["calls"] == calls[op] and c["bytes"] == size * calls[op],
              f"rank {rank} {op}: {c['calls']} calls of {c['max_bytes']} bytes (expected {calls[op]} of {size})")
        # A span the shim drops (its launch's thread was descheduled inside the call: kCallHeldUp, its work
        # on an idle stream) leaves a call untimed: 4 rank threads and NCCL's own on 2 loaded cores lose up to
        # half of them (3 of 6 seen at -j2 beside other NCCL tests).
        check(c["launched"] == c["calls"] and c["timed"] >= c["calls"] // 2,
              f"rank {rank} {op}: every call matched to its launch ({c['launched']}), nearly all timed ({c['timed']})")
        check(c["point_to_point"] == (op in ("Send", "Recv")), f"rank {rank} {op}: point-to-point or not")
        check(op in ("Send", "Recv") or "/" in c["algorithm"], f"rank {rank} {op}: algorithm/protocol named ({c['algorithm']})")
        api = {"Send": "ncclSend", "Recv": "ncclRecv"}.get(op, "nccl" + op)
        check(api in c["site"] and "main" in c["site"], f"rank {rank} {op}: the user's call named: {c['site']}")
    fusedRows = [rows.get((rank, op)) for op in ("AllReduce", "AllGather", "ReduceScatter")]
    check(all(c and c["fused"] == steps for c in fusedRows), f"rank {rank}: the group's three collectives fused into one launch per step")

# The truth: the trace's kernels per device, in order.
kernels = {}
for path in glob.glob(f"{work}/trace/*.jsonl"):
    for line in open(path):
        e = json.loads(line)
        if e.get("type") == "op" and e.get("op") == "kernel" and "ncclDevKernel" in e.get("name", ""):
            kind = re.search(r"ncclDevKernel_([A-Za-z]+)", e["name"]).group(1)
            kernels.setdefault((e["dev"], kind), []).append((e["start"], e["end"], e.get("peer_wait", -1)))
for v in kernels.values():
    v.sort()
# Device d is rank d (ncclCommInitAll with devices 0..3).
for rank in range(ranks):
    fused = kernels.get((rank, "AllGather"), [])
    check(len(fused) == steps, f"rank {rank}: {len(fused)} fused kernels in the trace")
    # Where a span was dropped, the timed calls' time is that of a subset of the kernels: within one
    # kernel's length per untimed call below the truth.
    true_ns = sum(e - s for s, e, _ in fused)
    untimed = steps - rows[(rank, "AllReduce")]["timed"]
    got = sum(rows[(rank, op)]["gpu_ns"] for op in ("AllReduce", "AllGather", "ReduceScatter") if (rank, op) in rows)
    longest = max((e - s for s, e, _ in fused), default=0)
    # A span on a loaded host: microseconds off per kernel (issue 32); 1% failed 3 runs in 4 at load 6-9 (5.86 ms of 6).
    slack = 0.02 * true_ns + steps * 10000
    check(true_ns - untimed * longest - slack <= got <= true_ns + slack,
          f"rank {rank}: the fused rows' GPU time {got} ns against the trace's {true_ns} ns ({untimed} untimed)")
    share = rows[(rank, "AllReduce")]["gpu_ns"] / got if got else 0
    expect_share = sizes["AllReduce"] / (sizes["AllReduce"] + sizes["AllGather"] + sizes["ReduceScatter"])
    check(abs(share - expect_share) < 0.01, f"rank {rank}: the all-reduce's share of the fused time {share:.3f} is its bytes' {expect_share:.3f}")
    sr = kernels.get((rank, "SendRecv"), [])
    sr_true = sum(e - s for s, e, _ in sr)
    sr_got = rows[(rank, "Send")]["gpu_ns"] + rows[(rank, "Recv")]["gpu_ns"]
    sr_untimed = steps - rows[(rank, "Send")]["timed"]
    sr_long = max((e - s for s, e, _ in sr), default=0)
    sr_slack = 0.01 * sr_true + steps * 10000
    check(sr_true - sr_untimed * sr_long - sr_slack <= sr_got <= sr_true + sr_slack,
          f"rank {rank}: send + recv GPU time {sr_got} ns against the trace's {sr_true} ns ({sr_untimed} untimed)")
    # Waiting for peers: the simulated driver's own account of each kernel's wait for the last rank.
    check(all(w >= 0 for _, _, w in fused), f"rank {rank}: the trace gives every fused kernel's wait (coupled)")
    wait_true = sum(max(w, 0) for _, _, w in fused)
    wait_got = sum(rows[(rank, op)]["wait_ns"] for op in ("AllReduce", "AllGather", "ReduceScatter"))
    # Compared across ranks only where every rank's kernel was timed: all of them, or (a span dropped)
    # a subset, whose waits cannot add up to more than all of them do.
    withPeers = rows[(rank, "AllReduce")]["with_peers"]
    # Compared where every rank's kernel of that step was timed: all steps when no span was lost.
    timedAll = min(rows[(q, "AllReduce")]["timed"] for q in range(ranks))
    check(withPeers >= 1 or timedAll < steps,
          f"rank {rank}: the fused collectives compared across the 4 ranks ({withPeers} of {steps}, every rank timed at {timedAll} or more)")
    # Slack per collective: a span's begin may sit ~20 us off the truth where the simulated driver's own
    # work after a submit (writing its trace under its lock, 4 rank threads on 2 cores) delays a launch's
    # return, and the last rank's begin enters every other rank's wait.
    if withPeers == steps:
        check(abs(wait_got - wait_true) <= 0.02 * max(wait_true, 1) + steps * 30000,
              f"rank {rank}: waited for peers {wait_got} ns against the trace's arrivals {wait_true} ns")
    else:
        check(wait_got <= wait_true * 1.02 + steps * 30000,
              f"rank {rank}: waited for peers {wait_got} ns over {withPeers} steps, at most the trace's {wait_true} ns over {steps}")
text = open(f"{work}/c.txt").read()
check("Collectives (NCCL)" in text and "AllReduce*" in text, "the text report has the Collectives section, fused marked")
mine = json.load(open(f"{work}/mine.json"))
check(not mine["collectives"], "a profiler plugin the user chose: gpuspy's is not loaded over it")
for ok, what in results:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for ok, _ in results) else 1)
PY
