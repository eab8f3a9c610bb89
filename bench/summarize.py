#!/usr/bin/env python3
"""bench/summarize.py: turns the raw results scripts/bench.sh leaves in its work folder into one table
of ratios (with shim / without, from the same run) against issue 6's targets, printed, and into
bench/RESULTS.md with every figure. Standard library only."""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, digits=0, unit=""):
    if x is None:
        return "n/a"
    if isinstance(x, float) and digits == 0 and abs(x) < 10:
        digits = 1
    return f"{x:,.{digits}f}{unit}"


# ---- hook_bench: per variant, per (api, threads, hooked): the medians over repetitions
HOOK_VARIANTS = [
    ("noshim", "no LD_PRELOAD (both columns are the driver's symbol: noise floor)"),
    ("nostack", "gpuspy, no stack (GPUSPY_STACK_DEPTH=0), GPU timing off"),
    ("gpu_sim0", "gpuspy, no stack, GPU timing on, simulated cuEventRecord free (SIMCUDA_HOST_COST=0)"),
    ("gpu_event", "gpuspy, no stack, GPU timing on, cuEventRecord's modelled 2.5 us host cost kept"),
    ("stack8", "gpuspy, 8-frame stack (verified frame pointers), GPU timing off"),
    ("stack24", "gpuspy, 24-frame stack (verified frame pointers), GPU timing off"),
    ("stack64", "gpuspy, 64-frame stack (verified frame pointers), GPU timing off"),
    ("stack8_unw", "gpuspy, 8-frame stack through unw_backtrace only (GPUSPY_STACK_FP=0), GPU timing off"),
    ("stack24_unw", "gpuspy, 24-frame stack through unw_backtrace only (GPUSPY_STACK_FP=0), GPU timing off"),
    ("stack64_unw", "gpuspy, 64-frame stack through unw_backtrace only (GPUSPY_STACK_FP=0), GPU timing off"),
    ("full_event", "gpuspy, 24-frame stack, GPU timing on, cuEventRecord's modelled cost kept"),
    ("dormant", "gpuspy dormant (GPUSPY_PAUSED=1: outside every capture window), 24-frame stack and GPU timing configured"),
]
APIS = ["launch", "copy", "query", "event"]
API_LABEL = {"launch": "cuLaunchKernel", "copy": "cuMemcpyHtoDAsync (256 B pinned)", "query": "cuStreamQuery",
             "event": "cuEventRecord (timing event)"}


def parse_hook(path):
    data = load_json(path)
    if not data:
        return None
    res = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
            continue
        m = re.match(r"(\w+)/(direct|hooked)/.*threads:(\d+)", b.get("run_name", ""))
        if not m:
            continue
        api, how, threads = m.group(1), m.group(2), int(m.group(3))
        if b.get("error_occurred"):
            continue
        res[(api, threads, how)] = {k: b.get(k) for k in ("mean_ns", "p50_ns", "p99_ns", "calls", "mean50_ns",
                                                          "over50_ppm")}
    return res


def hook_cost(h, api, threads, key):
    if not h:
        return None
    d, k = h.get((api, threads, "direct")), h.get((api, threads, "hooked"))
    if not d or not k or d.get(key) is None or k.get(key) is None:
        return None
    return k[key] - d[key]


def hook_ratio(h, api, threads):
    if not h:
        return None
    d, k = h.get((api, threads, "direct")), h.get((api, threads, "hooked"))
    if not d or not k or not d.get("mean_ns"):
        return None
    return k["mean_ns"] / d["mean_ns"]


def parse_stack(path):
    data = load_json(path)
    res = {}
    if not data:
        return res
    for b in data.get("benchmarks", []):
        if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
            continue
        res[b["run_name"]] = (b.get("real_time"), b.get("cpu_time"))
    return res


def parse_collector(path):
    data = load_json(path)
    res = {}
    if not data:
        return res
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        res[b["run_name"]] = b
    return res


def read_tree(work):
    """The tree the binaries were built from (scripts/bench.sh writes tree.txt): key -> [values]."""
    res = {}
    try:
        with open(os.path.join(work, "tree.txt")) as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep:
                    res.setdefault(key, []).append(value)
    except OSError:
        pass
    return res


def machine(root):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, cwd=root, capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001 - a missing tool leaves the field empty
            return ""

    cpu = ""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not cpu:
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line
    except OSError:
        pass
    return {
        "nproc": sh("nproc"),
        "cpu": cpu,
        "constant_tsc": "constant_tsc" in flags,
        "nonstop_tsc": "nonstop_tsc" in flags,
        "clocksource": sh("cat /sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "kernel": platform.release(),
        "load": sh("cat /proc/loadavg"),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": sh("git rev-parse HEAD"),
        "dirty": sh("git status --porcelain --untracked-files=no | wc -l"),
        "compiler": sh("c++ --version | head -1"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--command", default="scripts/bench.sh")
    ap.add_argument("--results")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    W = a.work

    hooks = {name: parse_hook(os.path.join(W, f"hook-{name}.json")) for name, _ in HOOK_VARIANTS}
    sinks = {name: (load_lines(os.path.join(W, f"sink-{name}.json")) or [None])[0] for name, _ in HOOK_VARIANTS}
    stack = parse_stack(os.path.join(W, "stack.json"))
    e2e = load_lines(os.path.join(W, "e2e.jsonl"))
    mem = load_lines(os.path.join(W, "mem.jsonl"))
    coll = parse_collector(os.path.join(W, "collector.json"))
    reports = load_lines(os.path.join(W, "report.jsonl"))
    gens = {}
    for fname in os.listdir(W):
        m = re.match(r"gen-(\d+)\.json$", fname)
        if m:
            lines = load_lines(os.path.join(W, fname))
            if lines:
                gens[int(m.group(1))] = lines[0]
    converts = {k: (load_lines(os.path.join(W, f"convert-{k}.json")) or [None])[0] for k in ("launch", "mixed")}
    mach = machine(a.root)

    # ---- derived figures
    def cost(variant, api, threads=1, key="p50_ns"):
        return hook_cost(hooks.get(variant), api, threads, key)

    # GPU timing's own cost: the GPU-timing variant minus the same configuration without it.
    def gpu_extra(variant, api, threads=1, key="mean_ns"):
        c1, c0 = cost(variant, api, threads, key), cost("nostack", api, threads, key)
        return None if c1 is None or c0 is None else c1 - c0

    e2e_rows = {}
    for r in e2e:
        run = r.get("run") or {}
        key = (run.get("mode"), r.get("config"))
        e2e_rows.setdefault(key, {"wall": [], "per": [], "sinks": []})
        e2e_rows[key]["wall"].append(run.get("wall_ns"))
        e2e_rows[key]["per"].append(run.get("ns_per_iteration"))
        if r.get("sink"):
            e2e_rows[key]["sinks"].append(r["sink"])

    def e2e_ratio(mode, config):
        base, x = e2e_rows.get((mode, "none")), e2e_rows.get((mode, config))
        if not base or not x:
            return None
        b, v = median(base["wall"]), median(x["wall"])
        return v / b if b else None

    def e2e_ratio_min(mode, config):
        base, x = e2e_rows.get((mode, "none")), e2e_rows.get((mode, config))
        if not base or not x:
            return None
        b, v = min(w for w in base["wall"] if w), min(w for w in x["wall"] if w)
        return v / b if b else None

    def e2e_per(mode, config):
        x = e2e_rows.get((mode, config))
        return median(x["per"]) if x else None

    mem_rows = {}
    mem_base = {}
    for r in mem:
        run = r.get("run") or {}
        mem_rows.setdefault((run.get("threads"), r.get("config")), []).append(run.get("growth_kib"))
        mem_base.setdefault(r.get("config"), []).append(run.get("rss_base_kib"))
    mem_table = []
    mem_nostack = {}
    for t in sorted({k[0] for k in mem_rows if k[0] is not None}):
        none, shim = median(mem_rows.get((t, "none"), [])), median(mem_rows.get((t, "shim"), []))
        ns = median(mem_rows.get((t, "shim_nostack"), []))
        per = (shim - none) / t if none is not None and shim is not None else None
        mem_table.append((t, none, shim, per))
        mem_nostack[t] = (ns, None if ns is None or none is None else (ns - none) / t)
    per_thread_kib = median([row[3] for row in mem_table if row[0] >= 8]) if mem_table else None

    def items_per_s(prefix):
        for name, b in coll.items():
            if name.startswith(prefix):
                return b.get("items_per_second")
        return None

    decode_rate = items_per_s("BM_Decode")
    ingest_rate = items_per_s("BM_Ingest/records:1000000/keep_raw:0")
    ingest_keep_rate = items_per_s("BM_Ingest/records:1000000/keep_raw:1")
    analyze_rate = items_per_s("BM_IngestAnalyze/records:1000000")

    rep_rows = {}
    for r in reports:
        rep_rows.setdefault((r["records"], "gspy" if r["file"].endswith(".gspy") else "raw"), []).append(r)
    big = max(gens) if gens else None
    small = min(gens) if gens else None

    def rep(n, kind, key):
        rows = rep_rows.get((n, kind), [])
        vals = [row[key] for row in rows]
        return min(vals) if key == "seconds" and vals else (max(vals) if vals else None)

    # ---- targets
    T = []  # (target, figure text, limit text, status, shortfall text)

    def judge(name, value, limit, unit, lower_is_better=True, digits=0, note=""):
        if value is None:
            T.append((name, "n/a", f"{'<=' if lower_is_better else '>='} {fmt(limit, digits)}{unit}", "not measured", note))
            return
        ok = value <= limit if lower_is_better else value >= limit
        by = ""
        if not ok:
            by = (f"+{fmt(value - limit, digits)}{unit} ({value / limit:.2f}x the limit)" if lower_is_better
                  else f"-{fmt(limit - value, digits)}{unit} ({value / limit:.2f}x the target)")
        T.append((name, f"{fmt(value, digits)}{unit}", f"{'<=' if lower_is_better else '>='} {fmt(limit, digits)}{unit}",
                  "met" if ok else "MISSED", "; ".join(x for x in (by, note) if x)))

    for api in APIS[:3]:
        judge(f"hook, no stack, {API_LABEL[api]}: median per call", cost("nostack", api), 100, " ns")
        judge(f"hook, no stack, {API_LABEL[api]}: p99 per call", cost("nostack", api, key="p99_ns"), 250, " ns")
    for api in APIS[:3]:
        judge(f"hook, 24-frame stack (verified frame pointers), {API_LABEL[api]}: median", cost("stack24", api), 250, " ns")
    for api in APIS[:3]:
        judge(f"hook, 24-frame stack (unw_backtrace), {API_LABEL[api]}: median", cost("stack24_unw", api), 600, " ns")
    for api in ("launch", "copy"):
        judge(f"GPU timing, {API_LABEL[api]}: added mean per call (event cost modelled; calls < 50 us)",
              gpu_extra("gpu_event", api, key="mean50_ns"), 500, " ns")
        judge(f"GPU timing, {API_LABEL[api]}: added mean per call (event cost modelled; all calls)",
              gpu_extra("gpu_event", api), 500, " ns")
        judge(f"GPU timing, {API_LABEL[api]}: added median per call (event cost modelled)",
              gpu_extra("gpu_event", api, key="p50_ns"), 500, " ns")
        judge(f"GPU timing, {API_LABEL[api]}: added mean per call (events free; calls < 50 us)",
              gpu_extra("gpu_sim0", api, key="mean50_ns"), 500, " ns")
    for mode, label in (("launch", "launch loop"), ("mixed", "copy+3 launches+query loop")):
        for config, what, limit in (("shim_nostack", "no stacks, GPU timing off", 3),
                                    ("shim_gpu", "no stacks, GPU timing on", 3),
                                    ("shim_full", "24-frame stacks + GPU timing", 10)):
            r, rb = e2e_ratio(mode, config), e2e_ratio_min(mode, config)
            note = "" if rb is None else f"best runs: {(rb - 1) * 100:+.1f} %"
            if config == "shim_gpu":
                note += " (the 3% target read with GPU timing on)"
            judge(f"end to end, {label}, {what}: slowdown (medians)", None if r is None else (r - 1) * 100, limit,
                  " %", digits=1, note=note)
    judge("collector ingest, one core (StreamIngest, as `report` reads)",
          None if ingest_rate is None else ingest_rate / 1e6, 20, " M records/s", lower_is_better=False, digits=1)
    if big:
        judge(f"`gpuspy report` on a {big / 1e6:.0f} M-record capture (bare stream)", rep(big, "raw", "seconds"), 10,
              " s", digits=1)
        judge(f"`gpuspy report` on a {big / 1e6:.0f} M-record capture (.gspy)", rep(big, "gspy", "seconds"), 10, " s",
              digits=1)
        judge("capture size per record (.gspy, synthetic mix)", gens[big].get("gspy_bytes_per_record"), 24, " B",
              digits=1)
    if converts.get("mixed"):
        judge("capture size per record (.gspy of a real shim stream, e2e mixed loop)",
              converts["mixed"].get("gspy_bytes_per_record"), 24, " B", digits=1)
    if big and small and rep(big, "raw", "max_rss_kib") and rep(small, "raw", "max_rss_kib"):
        rb, rs = rep(big, "raw", "max_rss_kib"), rep(small, "raw", "max_rss_kib")
        bounded = rb < 2 * rs
        T.append(("collector memory bounded (report peak RSS, 10x the records)",
                  f"{rs / 1024:,.0f} MiB at {small / 1e6:g} M, {rb / 1024:,.0f} MiB at {big / 1e6:g} M",
                  "not growing with N", "met" if bounded else "MISSED",
                  "" if bounded else f"{rb / rs:.1f}x the memory for {big / small:.0f}x the records: every record is held in RAM"))
    T.append(("app memory per thread (resident, with - without gpuspy)",
              "n/a" if per_thread_kib is None else f"{per_thread_kib:,.1f} KiB", "bounded, stated", "stated", ""))

    # ---- the printed table: ratios measured in this run
    ratio_rows = []
    for variant, label in HOOK_VARIANTS[1:]:
        for api in APIS[:3]:
            h = hooks.get(variant)
            if not h or (api, 1, "hooked") not in h:
                continue
            ratio_rows.append((f"hook {variant}: {api}, 1 thread (mean per call, hooked/direct)",
                               hook_ratio(h, api, 1), cost(variant, api, 1, "mean_ns")))
    for mode in ("launch", "mixed"):
        for config in ("shim_nostack", "shim_gpu", "shim_full"):
            base, v = e2e_per(mode, "none"), e2e_per(mode, config)
            ratio_rows.append((f"e2e {mode}: {config} / none (wall)", e2e_ratio(mode, config),
                               None if base is None or v is None else v - base))
    for t, none, shim, per in mem_table:
        ratio_rows.append((f"memory {t} threads: RSS growth with / without", None if not none else shim / none,
                           None if per is None else per * 1024))

    out = []
    out.append("# gpuspy benchmark results")
    out.append("")
    if a.quick:
        out.append("**Quick run (smoke test of the harness): too short to quote.**")
        out.append("")
    tree = read_tree(a.work)
    if tree.get("load_end"):
        mach["load"] = tree["load_end"][0]  # the run's, not this summary's (it may be written again later)
    out.append(f"- Machine: {mach['nproc']} CPUs, {mach['cpu']} (constant_tsc: {'yes' if mach['constant_tsc'] else 'no'}, "
               f"nonstop_tsc: {'yes' if mach['nonstop_tsc'] else 'no'}, clocksource: {mach['clocksource'] or '?'}), "
               f"Linux {mach['kernel']}; load average at the end: {mach['load']}")
    out.append(f"- Date: {mach['date']} (summary written)")
    if tree.get("built"):
        changed = tree.get("changed", [])
        out.append(f"- Built: {tree.get('built', ['?'])[0]} from commit `{tree.get('commit', ['?'])[0]}`"
                   + (f", with the working tree's uncommitted changes then in: {', '.join(f'`{c}`' for c in changed)} "
                      "(others were working in the tree: the run measured those files as they were at that time)"
                      if changed else ", no uncommitted changes"))
    else:
        out.append(f"- Commit: `{mach['commit']}`" + (f" plus uncommitted changes in {mach['dirty']} tracked file(s) "
                                                      "(others were working in the tree)" if mach['dirty'] not in ("", "0") else ""))
    out.append(f"- Compiler: {mach['compiler']}; Release build (`build-release/`, `-O3 -DNDEBUG`)")
    out.append(f"- Command: `{a.command}`")
    out.append("")
    out.append("## Targets (issue 6)")
    out.append("")
    out.append("| target | measured | limit | status | shortfall / note |")
    out.append("|---|---|---|---|---|")
    for row in T:
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("## Ratios, with gpuspy / without, measured in this run")
    out.append("")
    out.append("| row | ratio | added per call / iteration / thread |")
    out.append("|---|---|---|")
    for name, ratio, added in ratio_rows:
        unit = " B" if name.startswith("memory") else " ns"
        out.append(f"| {name} | {'n/a' if ratio is None else f'{ratio:.3f}'} | {fmt(added, 0, unit)} |")
    out.append("")

    out.append("## Hook path: per call, hooked - direct in one process")
    out.append("")
    out.append("Each cell: median over repetitions of the per-call p50 / p99 / mean (ns) through gpuspy's wrapper, "
               "minus the same through the driver's own symbol, same process, thread, stream (hook cost excluding "
               "the forwarded call). `direct` columns give the forwarded call itself. Records the shim "
               "dropped (queue full while the drain thread could not keep up) are given under each table: a dropped "
               "record skips the enqueue, so drops would flatter the figure.")
    out.append("")
    for variant, label in HOOK_VARIANTS:
        h = hooks.get(variant)
        if not h:
            continue
        s = sinks.get(variant)
        drop = ""
        if s:
            drop = f"{s.get('dropped_pct', 0):.1f}% of {s.get('made', 0):,} records dropped"
        out.append(f"### {variant}: {label}")
        out.append("")
        out.append("| call | threads | direct p50 | hooked p50 | cost p50 | direct p99 | hooked p99 | cost p99 | "
                   "cost mean | cost mean < 50 us | calls > 50 us (ppm, direct / hooked) | ratio (mean) |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for api in APIS:
            for t in (1, 2, 8):
                d, k = h.get((api, t, "direct")), h.get((api, t, "hooked"))
                if not d or not k:
                    continue
                out.append(f"| {API_LABEL[api]} | {t} | {fmt(d['p50_ns'])} | {fmt(k['p50_ns'])} | "
                           f"{fmt(cost(variant, api, t))} | {fmt(d['p99_ns'])} | {fmt(k['p99_ns'])} | "
                           f"{fmt(cost(variant, api, t, 'p99_ns'))} | {fmt(cost(variant, api, t, 'mean_ns'))} | "
                           f"{fmt(cost(variant, api, t, 'mean50_ns'))} | "
                           f"{fmt(d.get('over50_ppm'))} / {fmt(k.get('over50_ppm'))} | "
                           f"{fmt(hook_ratio(h, api, t), 2)} |")
        if drop:
            out.append("")
            out.append(f"Shim stream for the whole run: {drop}; {s.get('calls', 0):,} Call records received, "
                       f"{s.get('stack_defs', 0)} distinct stacks.")
        out.append("")

    out.append("### Stack capture on the hook path, cuLaunchKernel, 1 thread (variant cost - no-stack cost)")
    out.append("")
    out.append("| frames | added p50 | added mean | p50 per frame |")
    out.append("|---|---|---|---|")
    for depth in (8, 24, 64):
        c, c0 = cost(f"stack{depth}", "launch"), cost("nostack", "launch")
        m, m0 = cost(f"stack{depth}", "launch", 1, "mean_ns"), cost("nostack", "launch", 1, "mean_ns")
        add = None if c is None or c0 is None else c - c0
        addm = None if m is None or m0 is None else m - m0
        out.append(f"| {depth} | {fmt(add)} ns | {fmt(addm)} ns | {fmt(None if add is None else add / depth, 1)} ns |")
    out.append("")

    if stack:
        out.append("## Stack capture alone (bench/stack_bench.cpp, medians per capture)")
        out.append("")
        out.append("CPU time is the better figure on a shared machine (wall time includes waiting for a core).")
        out.append("")
        out.append("| benchmark | wall ns | CPU ns |")
        out.append("|---|---|---|")
        for name, (real, cpu) in sorted(stack.items()):
            out.append(f"| {name} | {fmt(real)} | {fmt(cpu)} |")
        out.append("")

    out.append("## End to end on the simulated driver, host costs modelled")
    out.append("")
    out.append("`bench/e2e_loop.cpp`, linked with -lcuda; kernel 1 us (SIMCUDA_KERNEL_DEFAULT_NS=1000), cuLaunchKernel "
               "3 us host, async copy 2 us, cuStreamQuery 0.2 us, cuEventRecord 2.5 us (the driver's defaults). "
               "`launch`: launches with a stream synchronize every 100. `mixed`: 4 KiB pinned HtoD copy, 3 launches, "
               "a stream query per step, a synchronize every 32 steps. Configurations run interleaved; median over "
               "runs. `shim_*`: LD_PRELOAD=libgpuspy.so writing a capture file (no collector).")
    out.append("")
    out.append("| loop | config | median per iteration | ratio of medians | ratio of best runs | runs | records (dropped) |")
    out.append("|---|---|---|---|---|---|---|")
    for mode in ("launch", "mixed"):
        for config in ("none", "shim_nostack", "shim_gpu", "shim_full"):
            x = e2e_rows.get((mode, config))
            if not x:
                continue
            recs = ""
            if x["sinks"]:
                sk = x["sinks"][0]
                recs = f"{sk.get('records', 0):,} ({sk.get('dropped', 0):,})"
            r = e2e_ratio(mode, config)
            rm = e2e_ratio_min(mode, config)
            out.append(f"| {mode} | {config} | {fmt(median(x['per']))} ns | {'1.000' if config == 'none' else fmt(r, 3)} | "
                       f"{'1.000' if config == 'none' else fmt(rm, 3)} | {len(x['wall'])} | {recs} |")
    out.append("")

    out.append("## Application memory per thread")
    out.append("")
    out.append("`bench/thread_mem.cpp`: T threads each make the context current and issue 16 launches, 16 copies, "
               "16 queries and a synchronize on their own stream; RSS read with all of them alive. gpuspy in its "
               "default configuration (24-frame stacks, GPU timing on). Growth = RSS with the threads - RSS before "
               "them (after the main thread's own calls, so gpuspy's per-process start-up is excluded); medians.")
    out.append("")
    out.append("| threads | growth without (KiB) | growth with gpuspy (KiB) | gpuspy per thread (KiB) | "
               "with gpuspy, GPUSPY_STACK_DEPTH=0 (KiB) | its per thread (KiB) |")
    out.append("|---|---|---|---|---|---|")
    for t, none, shim, per in mem_table:
        ns, nsper = mem_nostack.get(t, (None, None))
        out.append(f"| {t} | {fmt(none)} | {fmt(shim)} | {fmt(per, 1)} | {fmt(ns)} | {fmt(nsper, 1)} |")
    out.append("")
    out.append("Resident set before the threads (after the main thread's calls), median KiB: " +
               ", ".join(f"{c} {fmt(median(v))}" for c, v in sorted(mem_base.items())) + ".")
    out.append("")

    out.append("## Collector")
    out.append("")
    out.append("| figure | value |")
    out.append("|---|---|")
    out.append(f"| wire decode only, one core | {fmt(None if decode_rate is None else decode_rate / 1e6, 1)} M records/s |")
    out.append(f"| StreamIngest (decode + definitions; events to an observer), one core, as `report` reads | "
               f"{fmt(None if ingest_rate is None else ingest_rate / 1e6, 1)} M records/s |")
    out.append(f"| StreamIngest keeping validated bytes and events, as `collect` does | "
               f"{fmt(None if ingest_keep_rate is None else ingest_keep_rate / 1e6, 1)} M records/s |")
    out.append(f"| StreamIngest + the report's streaming analysis (StreamAnalyzer), one core | "
               f"{fmt(None if analyze_rate is None else analyze_rate / 1e6, 1)} M records/s |")
    for n in sorted(gens):
        g = gens[n]
        out.append(f"| synthetic capture, {n:,} body records ({g.get('records', 0):,} records in all): bare stream | "
                   f"{g.get('raw_bytes', 0):,} B = {g.get('raw_bytes_per_record', 0):.1f} B/record |")
        out.append(f"| same, as a .gspy capture (zstd chunks) | {g.get('gspy_bytes', 0):,} B = "
                   f"{g.get('gspy_bytes_per_record', 0):.1f} B/record |")
        for kind in ("raw", "gspy"):
            s, m = rep(n, kind, "seconds"), rep(n, kind, "max_rss_kib")
            if s is not None:
                out.append(f"| `gpuspy report` on it ({'bare stream' if kind == 'raw' else '.gspy'}): best wall, peak RSS | "
                           f"{s:.2f} s, {m / 1024:,.0f} MiB |")
    for k, c in converts.items():
        if c:
            out.append(f"| real shim stream (e2e {k} loop, stacks + GPU timing): bare / .gspy | "
                       f"{c.get('raw_bytes_per_record', 0):.1f} / {c.get('gspy_bytes_per_record', 0):.1f} B/record "
                       f"({c.get('records', 0):,} records) |")
    out.append("")
    out.append("The synthetic mix (bench/synth_stream.cpp): 4 threads repeating a 24-call step (2 async copies, 17 "
               "launches, 2 event records, 2 queries, 1 synchronize; 1 in 64 event records replaced by an alloc or "
               "free), a GPU span for every copy and every 8th launch, 256 stacks of 12-32 frames, 48 kernels.")
    out.append("")

    notes_path = os.path.join(a.root, "bench", "NOTES.md")
    if os.path.exists(notes_path) and not a.quick:
        with open(notes_path) as f:
            out.append(f.read().rstrip())
        out.append("")

    text = "\n".join(out) + "\n"
    # The table on stdout: targets, then ratios.
    print()
    print(f"{'target':<78} {'measured':>22} {'limit':>16}  status")
    for name, value, limit, status, note in T:
        print(f"{name[:78]:<78} {value[:22]:>22} {limit:>16}  {status} {note}")
    print()
    print(f"{'ratio (with gpuspy / without, this run)':<78} {'ratio':>8} {'added':>14}")
    for name, ratio, added in ratio_rows:
        unit = " B" if name.startswith("memory") else " ns"
        print(f"{name[:78]:<78} {'n/a' if ratio is None else f'{ratio:.3f}':>8} {fmt(added, 0, unit):>14}")
    if a.results:
        with open(a.results, "w") as f:
            f.write(text)
        print(f"\nwrote {a.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
