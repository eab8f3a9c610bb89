#!/usr/bin/env python3
# tests/report/kineto_export.py: `gpuspy export --format kineto` (issue 29) checked the way Holistic Trace
# Analysis (HTA) reads a directory of Kineto traces, and against the simulated driver's ground truth.
# Records PROGRAM under `gpuspy record --sim` with SIMCUDA_TRACE on (the caller's environment gives the
# simulated GPU: devices, NCCL ranks), exports, and checks:
#  - what HTA's parser needs, as its sources read it (facebookresearch/HolisticTraceAnalysis):
#    hta/common/trace_file.py: files ending in .json; each file's rank is the first `"rank":\s+(\d+)` of
#      its text, scanned line by line; one file per rank;
#    hta/common/trace_parser.py: the top level holds traceEvents and the metadata beside it (distributedInfo
#      backend/rank/world_size); events without dur or cat are dropped; infer_gpu_type looks for the name
#      cudaLaunchKernel among the events; hta/common/trace.py: baseTimeNanoseconds turns ts (us) into
#      wall-clock ns;
#    hta/configs/parser_config.py: every event has ts, dur, name, cat, pid, tid; event_args_1.0.0.yaml: the
#      args stream, correlation, device, bytes, grid, block, and the NCCL ones (Collective name, In msg
#      nelems, Out msg nelems, dtype, Group size);
#    hta/common/trace.py + trace_filter.py: GPU work is stream >= 0 with correlation >= 0 (kernels counted
#      with stream > 0), the rest is CPU; a call and its GPU work pair on equal correlation;
#    hta/common/types.py: GPU categories match (kernel)|(gpu_mem.+), memory kernels' names begin with
#      Memcpy or Memset, communication kernels' with nccl; trace_symbol_table.py: host calls are
#      cuda_runtime or cuda_driver;
#  - against the simulated driver's trace: per rank (device) as many kernels, copies and memsets as it
#    ran (its process's, on its devices), each at the time it ran (one clock across the files: the same offset from the trace's clock in
#    every file), NCCL kernels with the program's collectives; against `gpuspy dump`: every launch's
#    correlation id is the call's own.
# usage: kineto_export.py GPUSPY WORKDIR RANKS [--collectives] -- PROGRAM [ARGS...]
import glob, json, os, re, shutil, subprocess, sys, time

args = sys.argv[1:]
sep = args.index("--")
gpuspy, work, ranks = args[0], args[1], int(args[2])
collectives = "--collectives" in args[3:sep]
program = args[sep + 1:]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(f"{work}/trace")
env = dict(os.environ, SIMCUDA_TRACE=f"{work}/trace/%p.jsonl")


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        print(" ".join(cmd), "failed:", r.returncode, "\n", r.stdout)
        sys.exit(1)
    return r.stdout


run([gpuspy, "record", "--sim", "-f", "-o", f"{work}/c.gspy", "--"] + program, env=env)
print(run([gpuspy, "export", f"{work}/c.gspy", "--format", "kineto", "-o", f"{work}/kineto"]).strip())
dump = run([gpuspy, "dump", f"{work}/c.gspy"])

results = []


def check(ok, what):
    results.append((bool(ok), what))
    return ok


# ---- the directory as HTA lists it (trace_file.py): .json files, a rank each from its text.
files = sorted(f for f in os.listdir(f"{work}/kineto") if f.endswith(".json") or f.endswith(".gz"))
check(len(files) == ranks, f"{len(files)} trace files for {ranks} ranks: {files}")
rank_re = re.compile(r'"rank":\s+(\d+)')
traces = {}
for name in files:
    path = f"{work}/kineto/{name}"
    found = None
    with open(path) as fh:
        for line in fh:
            m = rank_re.search(line)
            if m:
                found = int(m.group(1))
                break
    check(found is not None and found not in traces, f"{name}: HTA finds its own rank in it ({found})")
    traces[found] = json.load(open(path))
check(sorted(traces) == list(range(ranks)), f"ranks 0..{ranks - 1}: {sorted(traces)}")

# ---- what HTA's parser reads, per file.
KERNEL_CAT = re.compile(r"(kernel)|(gpu_mem.+)")
bases = set()
for rank, t in sorted(traces.items()):
    di = t.get("distributedInfo", {})
    check(di.get("rank") == rank and di.get("world_size") == ranks, f"rank {rank}: distributedInfo {di}")
    check(di.get("backend") == ("nccl" if collectives else None), f"rank {rank}: backend {di.get('backend')}")
    check(t.get("schemaVersion") == 1 and isinstance(t.get("deviceProperties"), list), f"rank {rank}: schemaVersion, deviceProperties")
    check(isinstance(t.get("baseTimeNanoseconds"), int) and t["baseTimeNanoseconds"] > 1e18,
          f"rank {rank}: baseTimeNanoseconds is a wall-clock time ({t.get('baseTimeNanoseconds')})")
    bases.add((t.get("baseTimeNanoseconds"), t.get("gpuspy", {}).get("base_monotonic_ns")))
    ev = t["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    check(all(all(k in e for k in ("ts", "dur", "name", "cat", "pid", "tid")) for e in xs), f"rank {rank}: every X event has ts, dur, name, cat, pid, tid")
    check(all(isinstance(e["ts"], float) and isinstance(e["dur"], float) and e["dur"] >= 0 for e in xs),
          f"rank {rank}: ts and dur are microseconds as floats")
    gpu = [e for e in xs if KERNEL_CAT.search(e["cat"])]
    host = [e for e in xs if e["cat"] in ("cuda_runtime", "cuda_driver")]
    check(gpu and host, f"rank {rank}: {len(gpu)} GPU events, {len(host)} CUDA calls")
    check(all(e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") for e in gpu), f"rank {rank}: GPU categories are Kineto's")
    check(all(isinstance(e["args"].get("stream"), int) and e["args"]["stream"] > 0 and e["tid"] == e["args"]["stream"] for e in gpu),
          f"rank {rank}: GPU events have an integer stream > 0, their tid")
    check(all(isinstance(e["args"].get("correlation"), int) and e["args"]["correlation"] >= 0 for e in gpu), f"rank {rank}: GPU events carry a correlation id")
    check(all(e["pid"] == e["args"].get("device") for e in gpu), f"rank {rank}: GPU events on pid = device")
    check(all("stream" not in e.get("args", {}) for e in host), f"rank {rank}: host calls carry no stream (HTA: CPU side)")
    check(all(e["name"].startswith("Memcpy ") and e["args"].get("bytes", 0) > 0 for e in gpu if e["cat"] == "gpu_memcpy"),
          f"rank {rank}: copies named Memcpy ... with bytes")
    check(all(e["name"].startswith("Memset") for e in gpu if e["cat"] == "gpu_memset"), f"rank {rank}: memsets named Memset ...")
    check(all(len(e["args"].get("grid", [])) == 3 and len(e["args"].get("block", [])) == 3 for e in gpu if e["cat"] == "kernel"),
          f"rank {rank}: kernels have grid and block")
    # Pairing as HTA does: GPU side (stream >= 0, correlation >= 0) against the CPU side, on correlation.
    by_corr = {}
    for e in host:
        by_corr.setdefault(e["args"]["correlation"], []).append(e)
    unpaired = [e for e in gpu if len(by_corr.get(e["args"]["correlation"], [])) != 1]
    check(not unpaired, f"rank {rank}: every GPU event pairs with exactly one call ({len(unpaired)} do not)")
    # The launch names HTA counts (trace_symbol_table.py, get_runtime_launch_events_mask).
    launch_names = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")
    bad = [e for e in gpu if e["cat"] == "kernel" and not any(c["name"] in launch_names for c in by_corr.get(e["args"]["correlation"], []))]
    check(not bad, f"rank {rank}: every kernel pairs with its launch call ({len(bad)} do not)")
    late = [e for e in gpu for c in by_corr.get(e["args"]["correlation"], []) if c["ts"] > e["ts"] + 1000]
    check(not late, f"rank {rank}: no GPU work begins before its call ({len(late)} do, by over 1 ms)")
    # Flows as Kineto writes them: ac2g, "s" on the call's thread, "f" (bp e) on the work's stream, id = correlation.
    starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    ends = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g" and e.get("bp") == "e"}
    corrs = {e["args"]["correlation"] for e in gpu}
    check(set(starts) == corrs == set(ends), f"rank {rank}: one ac2g flow per call with GPU work ({len(starts)} of {len(corrs)})")
    check(all((starts[c]["pid"], starts[c]["tid"]) == (by_corr[c][0]["pid"], by_corr[c][0]["tid"]) for c in corrs if c in starts and c in by_corr),
          f"rank {rank}: flows start on the call's thread")
    meta = {(e["name"], e["pid"]) for e in ev if e.get("ph") == "M"}
    check(all(("process_name", e["pid"]) in meta for e in xs), f"rank {rank}: every pid named (process_name)")
    devices = {e["pid"] for e in gpu}
    host_pids = {e["pid"] for e in host}
    check(len(host_pids) == 1, f"rank {rank}: one process's calls ({sorted(host_pids)})")
    if collectives:
        # ncclCommInitAll over devices 0..N-1 in one process: device d is rank d, a file each.
        check(devices == {rank}, f"rank {rank}: its own device's work only (devices {sorted(devices)})")
    if collectives:
        nccl = [e for e in gpu if e["name"].startswith("nccl")]
        check(nccl, f"rank {rank}: NCCL kernels by their names ({len(nccl)})")
        comm = [e for e in nccl if "Collective name" in e["args"]]
        check(len(comm) == len(nccl), f"rank {rank}: every NCCL kernel has its collective ({len(comm)} of {len(nccl)})")
        need = ("Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size")
        check(all(all(k in e["args"] for k in need) and e["args"]["Group size"] == ranks and e["args"]["Rank"] == rank for e in comm),
              f"rank {rank}: NCCL kernels carry {', '.join(need)}, the group size and this rank")
        names = {"+".join(sorted(e["args"]["Collective name"].split("+"))) for e in comm}
        check(names == {"all_gather+allreduce+reduce_scatter", "recv+send", "broadcast"}, f"rank {rank}: the program's collectives: {sorted(names)}")
        fused = [e for e in comm if "allreduce" in e["args"]["Collective name"]]
        # nccl_collectives.cu's sizes: all-reduce 2^18 floats, all-gather 2^14 per rank, reduce-scatter 2^15
        # per rank; a fused group of several types in bytes (NCCL gives the all-gather's count in bytes).
        want_in = 4 * ((1 << 18) + (1 << 14) + (1 << 15) * ranks)
        want_out = 4 * ((1 << 18) + (1 << 14) * ranks + (1 << 15))
        steps = int(program[1])  # nccl_collectives' argument: its steps
        check(len(fused) == steps and all(e["args"]["In msg nelems"] == want_in and e["args"]["Out msg nelems"] == want_out and
                                      e["args"]["dtype"] == "Byte" for e in fused),
              f"rank {rank}: {steps} fused groups, each {want_in} bytes in, {want_out} out: " +
              str({(e["args"]["In msg nelems"], e["args"]["Out msg nelems"], e["args"]["dtype"]) for e in fused}))
        # The broadcast of 2^16 floats, in whatever type NCCL counted it (it gives some operations in bytes).
        size = {"Float": 4, "Char": 1, "Byte": 1, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8}
        bcast = [(e["args"]["In msg nelems"] * size.get(e["args"]["dtype"], 0), e["args"]["dtype"]) for e in comm if e["args"]["Collective name"] == "broadcast"]
        check(len(bcast) == 1 and bcast[0][0] == 4 << 16, f"rank {rank}: the broadcast of 2^16 floats: {bcast}")
check(len(bases) == 1, f"one time base in every file: {bases}")

# ---- the truth: the simulated driver's kernels, copies and memsets of the app's threads (gpuspy's own
# threads left out, as report_vs_trace does), per device.
app_threads = set()
for m in re.finditer(r"^pid ([0-9]+) @[0-9]+ Call #[0-9]+ \S+ \S+ tid=([0-9]+) ", dump, re.M):
    app_threads.add((int(m.group(1)), int(m.group(2))))
kinds = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
truth = []
for path in glob.glob(f"{work}/trace/*.jsonl"):
    for line in open(path):
        e = json.loads(line)
        if e.get("type") == "op" and e.get("op") in kinds and (e.get("pid"), e.get("tid")) in app_threads and not e.get("graph"):
            truth.append(e)
base_wall, base_mono = next(iter(bases))
check(isinstance(base_mono, int), "the gpuspy block gives the base's CLOCK_MONOTONIC time")
# The base's wall-clock and monotonic times differ by this machine's offset between the clocks (now: the
# same within a second, unless the clock was set meanwhile).
offset_now = time.time_ns() - time.monotonic_ns()
check(abs((base_wall - base_mono) - offset_now) < 1e9, f"baseTimeNanoseconds is the base's wall-clock time (offset {base_wall - base_mono} vs {offset_now} now)")
for rank, t in sorted(traces.items()):
    gpu = [e for e in t["traceEvents"] if e.get("ph") == "X" and KERNEL_CAT.search(e["cat"])]
    devs = {e["pid"] for e in gpu}
    pids = {e["pid"] for e in t["traceEvents"] if e.get("ph") == "X" and e["cat"] in ("cuda_runtime", "cuda_driver")}
    want = [o for o in truth if o["dev"] in devs and o["pid"] in pids]
    for op, cat in kinds.items():
        n_true = sum(1 for o in want if o["op"] == op)
        n_got = sum(1 for e in gpu if e["cat"] == cat)
        check(n_true == n_got, f"rank {rank}: {n_got} {cat} events, the trace ran {n_true} {op}s")
    # Each measured event at the time it ran, on the trace's clock (CLOCK_MONOTONIC): within 1 ms (a
    # loose bound: a span on a loaded host is microseconds off; an error of units or base is far more);
    # an upper bound (a blocking copy's span that covers the driver's host time too) holds the operation.
    unmatched = 0
    pool = sorted(want, key=lambda o: o["start"])
    used = set()
    for e in gpu:
        if e["args"].get("estimated"):
            continue
        begin = base_mono + round(e["ts"] * 1000)
        end = begin + round(e["dur"] * 1000)
        bound = e["args"].get("gpu_time") == "upper_bound"
        best = None
        for i, o in enumerate(pool):
            if i in used or kinds[o["op"]] != e["cat"] or o["dev"] != e["pid"]:
                continue
            if bound:
                if begin - 1_000_000 < o["start"] and o["end"] < end + 1_000_000 and best is None:
                    best = i
            elif abs(o["start"] - begin) < 1_000_000 and (best is None or abs(o["start"] - begin) < abs(pool[best]["start"] - begin)):
                best = i
        if best is None:
            unmatched += 1
        else:
            used.add(best)
    check(unmatched == 0, f"rank {rank}: every measured GPU event within 1 ms of an operation the trace ran ({unmatched} not)")

# ---- The directory again: its files are not overwritten without -f, and are with it.
again = subprocess.run([gpuspy, "export", f"{work}/c.gspy", "--format", "kineto", "-o", f"{work}/kineto"], capture_output=True, text=True)
check(again.returncode != 0 and "already exists" in again.stderr, f"export again without -f refuses: {again.returncode} {again.stderr.strip()[:120]}")
forced = subprocess.run([gpuspy, "export", f"{work}/c.gspy", "--format", "kineto", "-f", "-o", f"{work}/kineto"], capture_output=True, text=True)
check(forced.returncode == 0 and sorted(os.listdir(f"{work}/kineto")) == files, "export again with -f rewrites the same files")

# ---- Perfetto: every rank in one trace, each process and GPU stream labelled with its NCCL rank (with
# ncclCommInitAll over devices 0..N-1, device d is rank d).
if collectives:
    run([gpuspy, "export", f"{work}/c.gspy", "--format", "perfetto", "-o", f"{work}/c.trace.json"])
    pt = json.load(open(f"{work}/c.trace.json"))["traceEvents"]
    procs = [e["args"]["name"] for e in pt if e.get("ph") == "M" and e.get("name") == "process_name"]
    want = "ranks " + ", ".join(str(r) for r in range(ranks)) + f" of {ranks}"
    check(any(want in n for n in procs), f"perfetto: the process labelled '{want}': {procs}")
    streams = [e["args"]["name"] for e in pt if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"]["name"].startswith("GPU ")]
    wrong = [n for n in streams if not re.search(r"^GPU (\d+) .*rank \1$", n)]
    check(streams and not wrong, f"perfetto: each GPU's streams labelled with its rank ({len(streams)} streams; not: {wrong})")

for ok, what in results:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for ok, _ in results) else 1)
