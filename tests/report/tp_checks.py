#!/usr/bin/env python3
# tests/report/tp_checks.py: the checks of a one-process-per-GPU job's reports against the simulated driver's
# traces (issue 29), shared by tests/report/tp_stragglers.sh (the 4 ranks recorded as one capture by `gpuspy
# record`) and tests/report/ranks_tp.sh (each rank writing its own capture, read as one run). WORK holds, for the
# modes late and even: MODE.json (the report), trace.MODE/*.jsonl (one trace per process), late.txt (the text
# report), diff.json (`gpuspy diff --format json` of late against even) and late.kineto/ (the Kineto export).
# Checked: every collective of every rank counted with its bytes, each rank's wait for its peers against the
# driver's, the straggler finding naming rank 2 by pid and rank with the others' lost time and its saving, against
# what removing the delay really saves; no straggler in even; the diff calls the finding resolved; one Kineto
# file per rank. Prints one line per check; exit status 1 when any failed.
# usage: tp_checks.py WORK STEPS LAYERS
import glob, json, sys
work, steps, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = steps * layers          # all-reduces per rank
bytes_each = (1 << 18) * 4  # nccl_tp's kCount floats
results = []
check = lambda ok, what: results.append((bool(ok), what))

def trace(mode):
    """Per process (its pid in the trace): its device and its NCCL kernels in order, (start, end, peer_wait)."""
    procs = {}
    for path in glob.glob(f"{work}/trace.{mode}/*.jsonl"):
        for line in open(path):
            e = json.loads(line)
            if e.get("type") == "op" and e.get("op") == "kernel" and "ncclDevKernel" in e.get("name", ""):
                # The GPU: the physical device where the process saw one of CUDA_VISIBLE_DEVICES ("pdev").
                p = procs.setdefault(e["pid"], {"dev": e.get("pdev", e["dev"]), "k": []})
                p["k"].append((e["start"], e["end"], e.get("peer_wait", -1)))
    for p in procs.values():
        p["k"].sort()
    return procs

for mode in ("late", "even"):
    r = json.load(open(f"{work}/{mode}.json"))
    t = trace(mode)
    check(len(t) == 4 and sorted(p["dev"] for p in t.values()) == [0, 1, 2, 3],
          f"{mode}: 4 processes in the traces, one GPU each ({ {pid: p['dev'] for pid, p in t.items()} })")
    check(all(len(p["k"]) == n and all(w >= 0 for _, _, w in p["k"]) for p in t.values()),
          f"{mode}: {n} coupled all-reduce kernels per process, each with its wait, in the traces")
    rows = {c["pid"]: c for c in r["collectives"] if c["op"] == "AllReduce"}
    comms = {c["comm_id"] for c in r["collectives"]}
    check(set(rows) == set(t) and len(comms) == 1,
          f"{mode}: one AllReduce row per process, one communicator ({sorted(rows)} against the traces' {sorted(t)}, {len(comms)} communicator(s))")
    for pid, p in t.items():
        c = rows.get(pid)
        if not c:
            continue
        check(c["rank"] == p["dev"] and c["nranks"] == 4, f"{mode}: pid {pid} is rank {c['rank']}/{c['nranks']} (its GPU {p['dev']})")
        check(c["calls"] == n and c["bytes"] == n * bytes_each,
              f"{mode}: pid {pid}: {c['calls']} all-reduces of {c['bytes']} bytes (the trace: {n}, {n * bytes_each})")
        # Waiting for peers, against the driver's own account of each kernel's wait for the last rank. Compared
        # across ranks only where every rank's kernel was timed: all of them, or a subset (a loaded host's
        # descheduled launch loses its span) whose waits are at most all of them and at least all but the
        # longest missing ones. Slack per collective: a span's begin may sit ~20 us off the truth (the driver's
        # trace write after a submit delays a launch's return) and the last rank's begin enters every wait.
        waits = [w for _, _, w in p["k"]]
        truth, got, missing = sum(waits), c["wait_ns"], n - c["with_peers"]
        check(c["with_peers"] >= n // 2, f"{mode}: pid {pid}: {c['with_peers']} of {n} collectives compared across the ranks")
        slack = 0.02 * truth + n * 30000
        low = truth - sum(sorted(waits)[n - missing:]) - slack if missing > 0 else truth - slack
        check(low <= got <= truth + slack,
              f"{mode}: pid {pid} (rank {c['rank']}) waited for peers {got / 1e6:.2f} ms, the driver's {truth / 1e6:.2f} ms ({missing} not compared)")

# The truth itself: the simulated driver couples the k-th all-reduce of the 4 processes as a GPU does: each ends
# its own duration (300 us) after the last rank's start, and its wait is that start less its own.
for mode in ("late", "even"):
    k = {p["dev"]: p["k"] for p in trace(mode).values()}
    bad = [s for s in range(n) if len(k) == 4 and any(
        k[d][s][1] != max(k[e][s][0] for e in range(4)) + 300000 or k[d][s][2] != max(k[e][s][0] for e in range(4)) - k[d][s][0]
        for d in range(4))]
    check(len(k) == 4 and not bad, f"{mode}: every all-reduce ends 300 us after the last process's start, its wait the difference (off: {bad})")

def straggler(mode):
    r = json.load(open(f"{work}/{mode}.json"))
    return [f for f in r["findings"] if f["rule"] == "straggler"]

t = trace("late")
pid2 = next((pid for pid, p in t.items() if p["dev"] == 2), None)
found = straggler("late")
check(len(found) == 1, f"late: one straggler finding ({len(found)})")
if found:
    f = found[0]
    ev = dict(f["evidence"]) if isinstance(f["evidence"], list) else f["evidence"]
    check(ev["rank"] == 2 and int(ev["pid"]) == pid2, f"late: names rank 2, pid {pid2} (rank {ev['rank']}, pid {int(ev['pid'])})")
    check(ev["collectives_compared"] >= n // 2 and ev["arrived_last"] >= ev["collectives_compared"] - 2 and ev["host_late"] > ev["gpu_late"],
          f"late: last at {ev['arrived_last']} of {ev['collectives_compared']}, host_late {ev['host_late']} against gpu_late {ev['gpu_late']}")
    # The others' lost time, as the driver accounts it, over the collectives rank 2 reached last; its lateness there.
    by_dev = {p["dev"]: p["k"] for p in t.values()}
    waits, lates = [], []
    for s in range(n):
        starts = {d: by_dev[d][s][0] for d in range(4)}
        if max(starts, key=starts.get) != 2:
            continue
        waits.append(sum(by_dev[d][s][2] for d in range(4) if d != 2))
        lates.append(starts[2] - max(v for d, v in starts.items() if d != 2))
    missing = n - int(ev["collectives_compared"])
    def within(got, truth, what):
        slack = 0.03 * sum(truth) + n * 30000
        top = sum(sorted(truth)[len(truth) - missing:]) if missing > 0 else 0
        check(sum(truth) - top - slack <= got <= sum(truth) + slack,
              f"late: {what} {got / 1e6:.2f} ms, the driver's {sum(truth) / 1e6:.2f} ms ({missing} collective(s) not compared)")
    within(ev["others_wait_ns"], waits, "the others lost")
    within(f["estimated_savings_ns"] * (ev["collectives_compared"] / ev["collectives"]), lates, "saving over the collectives compared")
check(not straggler("even"), f"even: no straggler finding ({len(straggler('even'))})")
# What the fix really saves: even's collectives' span against late's, first all-reduce start to last end.
def span(mode):
    k = [p["k"] for p in trace(mode).values()]
    return max(v[-1][1] for v in k) - min(v[0][0] for v in k)
real = span("late") - span("even")
if found and real > 0:
    ratio = found[0]["estimated_savings_ns"] / real
    check(1 / 1.5 <= ratio <= 1.5, f"late: the finding's saving {found[0]['estimated_savings_ns'] / 1e6:.2f} ms against the "
                                   f"{real / 1e6:.2f} ms the fix saves (the collectives' span, late - even): {ratio:.2f}")
else:
    check(False, f"late: a finding and a positive saving to compare ({real / 1e6:.2f} ms)")
st = {f["rule"]: f["status"] for f in json.load(open(f"{work}/diff.json"))["findings"]}
check(st.get("straggler") == "resolved", f"gpuspy diff late even: straggler {st.get('straggler')}")
# The Kineto export: four files, rank R of 4 each holding the GPU work of the process whose launcher
# variables said RANK=R (the report's process rows), as HTA's trace_file.py reads a rank from the file.
import glob as _glob
rep = json.load(open(f"{work}/late.json"))
rank_of_pid = {p["pid"]: p.get("rank", -1) for p in rep["processes"]}
check(sorted(rank_of_pid.values()) == [0, 1, 2, 3], f"the report's processes carry their launcher ranks: {sorted(rank_of_pid.values())}")
files = sorted(_glob.glob(f"{work}/late.kineto/rank-*.pt.trace.json"))
check(len(files) == 4, f"kineto: one file per rank ({len(files)})")
for path in files:
    k = json.load(open(path))
    di = k.get("distributedInfo", {})
    r = di.get("rank", -1)
    pids = {e.get("pid") for e in k["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    check(di.get("world_size") == 4 and path.endswith(f"rank-{r}.pt.trace.json") and
          all(rank_of_pid.get(q) == r for q in pids) and pids,
          f"kineto {path.rsplit('/', 1)[1]}: rank {r} of {di.get('world_size')}, host calls of processes {sorted(pids)} "
          f"(their launcher ranks {sorted(rank_of_pid.get(q, -1) for q in pids)})")
text = open(f"{work}/late.txt").read()
check("arrived last" in text and "straggler" in text and f"pid {pid2}" in text, "the text report names the straggler and its pid")
for ok, what in results:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for ok, _ in results) else 1)
