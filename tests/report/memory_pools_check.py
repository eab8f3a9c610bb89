#!/usr/bin/env python3
"""tests/report/memory_pools.sh's checks of one story of tests/apps/pool_memory (see memory_pools.sh)."""
import json
import re
import sys

CHUNK = 2 << 20        # the simulated driver's pool granularity (tests/simcuda/src/memory.cpp)
GROW_NS = 20000        # its host cost of a growth (kPoolGrowNs there)

mode, out_path, json_path, txt_path, trace_path = sys.argv[1:6]
out = open(out_path).read()
truth = {k: int(v) if v.isdigit() else v
         for k, v in (kv.split("=") for kv in re.search(r"^truth pool_memory (.*)$", out, re.M).group(1).split())}
report = json.load(open(json_path))
text = open(txt_path).read()
trace = json.load(open(trace_path))["traceEvents"]
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + f"{mode}: {what}")
    failed += not ok


rows = [m for m in report["memory"] if m["space"] == "device"]
row = rows[0] if len(rows) == 1 else None
check(row is not None, f"one device memory row ({len(rows)})")
if row is None:
    sys.exit(1)
pools = row["pools"]
check(len(pools) == 1, f"one pool row ({[p['pool'] for p in pools]})")
p = pools[0]
kind = "created" if mode == "created" else "default"
check(p["pool"] == kind, f"the pool is the {kind} one ({p['pool']})")
check(p["peak_used_bytes"] == truth["used_high"], f"peak use {p['peak_used_bytes']} = the driver's used high {truth['used_high']}")
check(p["used_end_bytes"] == truth["used_end"], f"use at the end {p['used_end_bytes']} = the driver's {truth['used_end']}")
for mine, theirs in (("peak_reserved_min_bytes", "reserved_high"), ("reserved_min_end_bytes", "reserved_end")):
    check(p[mine] <= truth[theirs] < p[mine] + CHUNK,
          f"{mine} {p[mine]} is a floor of the driver's {theirs} {truth[theirs]}, within one chunk")
check(p["grows"] == truth["grows"] and p["regrows"] == truth["regrows"],
      f"growths {p['grows']} and regrowths {p['regrows']} = the program's count ({truth['grows']}, {truth['regrows']})")
rules = {f["rule"]: f for f in report["findings"]}
if mode == "keep":
    check(p["release_threshold_set"] and p["release_threshold_bytes"] == 2**64 - 1, "the threshold set to the maximum")
    fails = row["failures"]
    check(len(fails) == 1 and fails[0]["bytes"] == truth["failed_bytes"] and
          fails[0]["pool_unused_min_bytes"] <= truth["unused_at_failure"] < fails[0]["pool_unused_min_bytes"] + CHUNK,
          f"the failed cudaMalloc: pools kept {fails and fails[0]['pool_unused_min_bytes']} unused then "
          f"(driver: {truth['unused_at_failure']})")
    f = rules.get("pool-keeps-memory")
    check(f is not None and f["severity"] == "high" and "failed" in f["message"] and f["estimated_savings_ns"] == 0,
          f"pool-keeps-memory, high, names the failed allocation ({f and f['severity']})")
    check("default pool (release threshold maximum)" in text and "stream-ordered pools kept at least" in text,
          "the text report names the pool and what it kept at the failure")
    held = [e["args"]["held (bytes)"] for e in trace
            if e.get("ph") == "C" and e.get("name") == "GPU memory: device 0 held (pools' reserve, at least)"]
    check(held and max(held) == row["peak_held_min_bytes"] and held[-1] == p["reserved_min_end_bytes"],
          f"the Perfetto held track peaks at {max(held) if held else '-'} and ends at the pool's floor")
elif mode == "regrow":
    f = rules.get("pool-regrowth")
    truth_saving = truth["regrows"] * GROW_NS
    check(f is not None and truth_saving / 2 <= f["estimated_savings_ns"] <= 2 * truth_saving + 2_000_000,
          f"pool-regrowth saves {f and f['estimated_savings_ns']} ns against the driver's {truth_saving} ns")
    check(f is not None and "release threshold" in f["message"] and f["callsites"] and
          "regrow_alloc" in report["callsites"][f["callsites"][0]]["label"],
          "the finding asks for a release threshold, at regrow_alloc")
    check("pool-keeps-memory" not in rules, "no pool-keeps-memory (the pool gave everything back)")
    pred = (f or {}).get("prediction", {})
    check(pred.get("fix") == "pool-threshold" and pred.get("calls_changed") == truth["regrows"],
          f"the saving is the replay's with the pool-threshold fix on each regrowing allocation ({pred.get('fix')}, "
          f"{pred.get('calls_changed')} calls changed)")
elif mode == "regrow_fixed":
    check("pool-regrowth" not in rules, "no pool-regrowth finding with the threshold set")
    check("pool-keeps-memory" not in rules, "no pool-keeps-memory for one buffer kept (below the finding's size)")
elif mode == "created":
    check(p["allocations"] == 5 and p["trims"] == 1 and p["reserved_min_end_bytes"] == 0 and
          truth["reserved_before_trim"] >= p["peak_reserved_min_bytes"],
          f"5 allocations from its own pool, one trim to nothing ({p['allocations']}, {p['trims']}, {p['reserved_min_end_bytes']})")
    check("pool made by cudaMemPoolCreate" in text, "the text report names the pool made by cudaMemPoolCreate")
sys.exit(1 if failed else 0)
