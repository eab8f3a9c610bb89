#!/usr/bin/env bash
# tests/savings/savings_test.sh: each finding's estimated saving against the saving its recommended fix
# brings on the simulated GPU. For each bad/fixed pair of savings_pairs, both programs are recorded three
# times (record --repeat 3) with the simulated driver's trace on; the true saving is taken from the trace,
# median over the runs, as one of:
#   copies  the copies' device time (the driver's modelled durations: the same on a busy machine);
#   gaps    the GPU's idle time between its operations (how much sooner the device work completes). The
#           pairs' GPU work dominates (20 ms kernels against 0.3 ms of host work a step), so the fixed
#           programs' GPU never waits, even for a host descheduled for milliseconds: the saving is the bad
#           program's idle time, measured in the same runs the estimate comes from, whatever the load;
#   calls   the host's time inside the copy calls as the driver saw it (SIMCUDA_TRACE_CALLS): what batching
#           removes from the host's path (the app's own per-call work outside the driver comes on top);
#   allocs  the host's time inside the stream-ordered allocation calls (SIMCUDA_TRACE_CALLS): what hoisting
#           them out of a host-bound loop removes from the host's path;
#   span    the device work's span, first start to last end (the legacy pair: its GPU is never idle, its
#           streams' work runs one after another; 20 ms kernels dwarf the host's part).
# Checked for every pair: the bad program's report has the finding with a saving, `gpuspy diff bad fixed`
# shows it resolved, every stated bound (at most / at least) holds and the estimate is within 2x of the
# true saving. Pairs marked strict are asserted only with GPUSPY_SAVINGS_STRICT=1 (a quiet machine), printed
# otherwise: launch-bound (its saving is the time the host took between launches, load-dependent in the bad
# and the fixed run alike: with a CPU hog on each core the fixed run's gaps swung the truth from +136 ms to
# -72 ms). Pairs marked bound have their stated bound asserted always and the 2x only when strict:
# implicit-sync and sync-memcpy (with a CPU hog at the tests' own priority on each core the bad runs' waits
# stretched: estimate/true 2.30 and 2.52 in one run, 1.06-1.43 and 0.96-1.40 on a quieter machine).
# SAVINGS_ONLY='bad-mode ...' runs only those pairs (for debugging).
# usage: savings_test.sh GPUSPY SAVINGS_PAIRS
set -uo pipefail
cli=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
export SIMCUDA_KERNEL_NS=step=20000000,tiny=2000,fused10=20000
fail=0
# bad fixed rule truth checked fix whatif-truth
for pair in "pageable pinned pageable-memcpy copies always pinned calls" "sync-loop sync-once sync-in-loop gaps always fewer-syncs gaps" \
            "tiny graph launch-bound-kernels gaps strict graphs gaps" "free-loop free-once implicit-sync gaps bound hoist-allocs gaps" \
            "sync-copy async-copy sync-memcpy gaps bound async-copies gaps" \
            "small-copies batched small-transfers calls always batch-copies calls" \
            "legacy nonblocking legacy-stream-serialisation span always nonblocking-streams span" \
            "async-loop async-once alloc-in-loop allocs always hoist-allocs allocs" \
            "graph-decode graph-fused graph-launch-bound gaps always cheaper-graph-launches gaps"; do
    set -- $pair
    [ -n "${SAVINGS_ONLY:-}" ] && [[ " $SAVINGS_ONLY " != *" $1 "* ]] && continue
    calls=0
    [ "$4" = calls ] || [ "$7" = calls ] || [ "$4" = allocs ] && calls=1
    # The graph pair's driver spends 3 us of host time per node of a graph launch (a decode step's graph of
    # 200 tiny kernels costs more to launch than it runs); the others keep the default (none).
    extra=()
    [ "$1" = graph-decode ] && extra=(SIMCUDA_GRAPH_NODE_NS=3000)
    for mode in "$1" "$2"; do
        mkdir -p "trace.$mode"
        env "${extra[@]}" SIMCUDA_TRACE_CALLS=$calls SIMCUDA_TRACE="$dir/trace.$mode/%p.jsonl" "$cli" record --sim --repeat 3 -f -o "$mode.gspy" -- "$prog" "$mode" \
            >/dev/null 2>"$mode.err" || { echo "FAIL: record $mode"; cat "$mode.err"; fail=1; continue 2; }
    done
    "$cli" report --format json "$1.gspy" > "$1.json" && "$cli" diff --format json "$1.gspy" "$2.gspy" > "$1.diff.json" ||
        { echo "FAIL: report/diff of $1"; fail=1; continue; }
    "$cli" whatif --format json --fix "$6" "$1.gspy" > "$1.whatif.json" && "$cli" whatif --format json "$2.gspy" > "$2.whatif.json" &&
        "$cli" report --format json "$2.gspy" > "$2.json" || { echo "FAIL: whatif of $1 / $2"; fail=1; continue; }
    python3 - "$1" "$2" "$3" "$4" "$([ "$5" = always ] && echo 1 || echo "${GPUSPY_SAVINGS_STRICT:-0}")" "$([ "$5" = strict ] && echo "${GPUSPY_SAVINGS_STRICT:-0}" || echo 1)" "$6" "${GPUSPY_SAVINGS_STRICT:-0}" "$7" <<'PY' || fail=1
import glob, json, statistics, sys
bad, fixed, rule, kind, strict = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
bound_checked = sys.argv[6] == "1"  # the stated direction (at most / at least)
fix, quiet, whatif_kind = sys.argv[7], sys.argv[8] == "1", sys.argv[9]

def truth(mode, kind=kind):
    """Median over the runs of the copies' device time, the device's idle time between operations or the
    host's time in copy calls."""
    values = []
    for path in glob.glob(f"trace.{mode}/*.jsonl"):
        lines = [json.loads(l) for l in open(path)]
        ops = sorted((o for o in lines if o["type"] == "op"), key=lambda o: o["start"])
        if not ops:
            continue
        if kind in ("calls", "allocs"):
            prefix = ("cuMemcpy",) if kind == "calls" else ("cuMemAllocAsync", "cuMemFreeAsync")
            values.append(sum(c["end"] - c["start"] for c in lines
                              if c["type"] == "call" and c["api"].startswith(prefix)))
            continue
        if kind == "copies":
            values.append(sum(o["end"] - o["start"] for o in ops if o["op"] == "memcpy"))
        elif kind == "span":
            values.append(max(o["end"] for o in ops) - ops[0]["start"])
        else:
            gaps, end = 0, None
            for o in ops:
                if end is not None and o["start"] > end:
                    gaps += o["start"] - end
                end = o["end"] if end is None else max(end, o["end"])
            values.append(gaps)
    assert len(values) == 3, f"{mode}: {len(values)} traced runs, not 3"
    return statistics.median(values)

report = json.load(open(f"{bad}.json"))
diff = json.load(open(f"{bad}.diff.json"))
found = [f for f in report["findings"] if f["rule"] == rule]
spread = {s["name"]: s for s in report["spread"]["findings"]}
errors = []
if not found or rule not in spread or spread[rule]["median"] <= 0:
    errors.append(f"{bad}: no {rule} finding with a saving")
status = [f["status"] for f in diff["findings"] if f["rule"] == rule]
if status != ["resolved"]:
    errors.append(f"diff {bad} {fixed}: {rule} is {status}, not resolved")
if not errors:
    estimate = spread[rule]["median"]
    bound = found[0]["estimated_savings_bound"]
    true = truth(bad) - truth(fixed)
    ratio = estimate / true if true > 0 else float("inf")
    holds = {"at_most": true <= estimate * 1.05, "at_least": true >= estimate * 0.95}.get(bound, True)
    print(f"{rule:22} {bad:>9} -> {fixed:<9} estimate {bound:8} {estimate / 1e6:9.2f} ms "
          f"[{spread[rule]['min'] / 1e6:.2f}-{spread[rule]['max'] / 1e6:.2f}]  true saving {true / 1e6:9.2f} ms "
          f"({kind})  estimate/true {ratio:5.2f}  bound {'holds' if holds else 'BROKEN'}"
          f"{'' if strict else '  (bound asserted, 2x not)' if bound_checked else '  (not asserted)'}")
    if bound_checked and not holds:
        errors.append(f"{rule}: the estimate says {bound} {estimate / 1e6:.2f} ms, the fix saved {true / 1e6:.2f} ms")
    if strict:
        if not 0.5 <= ratio <= 2:
            errors.append(f"{rule}: estimate {estimate / 1e6:.2f} ms is not within 2x of the saving {true / 1e6:.2f} ms")
# The replay (gpuspy whatif): replayed unchanged, each run within 5% of its measured wall; the fix's predicted
# saving (median over the bad program's runs) against what the fix saved. The truth: for the pairs whose
# saving is the bad program's GPU idle time (gaps, see above) that, robust to load, within 1.5x always (the
# launch-bound pair, whose gaps swing with the load, on a quiet machine only); for the pinned and batched
# pairs the host time in copy calls the fix removes (SIMCUDA_TRACE_CALLS), always.
wb, wf = json.load(open(f"{bad}.whatif.json")), json.load(open(f"{fixed}.whatif.json"))
for w, mode in ((wb, bad), (wf, fixed)):
    for p in w["processes"]:
        if abs(p["replay_error_pct"]) > 5:
            errors.append(f"whatif {mode} pid {p['pid']}: replayed unchanged {p['unchanged']['wall_ns']} ns against "
                          f"the measured {p['measured_wall_ns']} ns ({p['replay_error_pct']:+.1f}%)")
predicted = [s["saving_ns"] for p in wb["processes"] for s in p["scenarios"] if s["name"] == fix]
if len(predicted) != len(wb["processes"]) or not predicted:
    errors.append(f"whatif {bad}: the fix {fix} does not apply to every run ({len(predicted)} of {len(wb['processes'])})")
else:
    pred = statistics.median(predicted)
    walls = lambda r: statistics.median(p["wall_ns"] for p in r["processes"])
    if whatif_kind == "gaps":
        real, basis, asserted = truth(bad, "gaps") - truth(fixed, "gaps"), "the GPU idle time it removes", bound_checked
    elif whatif_kind == "allocs":
        real, basis, asserted = truth(bad, "allocs") - truth(fixed, "allocs"), "alloc/free calls' host time, bad - fixed", True
    elif whatif_kind == "span":
        real, basis, asserted = truth(bad, "span") - truth(fixed, "span"), "the device work's span it shortens", True
    else:
        # The host's time in copy calls, bad less fixed: both pairs' copies are synchronous and back to back
        # on the host's path, so what the calls lose is what the run loses (a pageable copy's call also
        # stages the data: more than its device time).
        real, basis, asserted = truth(bad, "calls") - truth(fixed, "calls"), "copy calls' host time, bad - fixed", True
    # A prediction that rests on a stated default (pinned bandwidth with no pinned copy in the capture: 2x
    # the pageable one, where hardware shows 1.5-3x) is printed, not held to 1.5x (quiet machine: 1.46).
    assumed = [k for p in wb["processes"] for k, c in p["calibration"].items()
               if fix == "pinned" and k.startswith("pinned_") and c["source"].startswith("default")]
    if assumed and not quiet:
        asserted, basis = False, basis + "; pinned cost assumed"
    ratio = pred / real if real > 0 else float("inf")
    print(f"whatif {fix:14} {bad:>12} -> {fixed:<10} predicted {pred / 1e6:9.2f} ms  saved {real / 1e6:9.2f} ms ({basis})"
          f"  predicted/saved {ratio:5.2f}{'' if asserted else '  (not asserted: GPUSPY_SAVINGS_STRICT=1 does)'}")
    if asserted and not (1 / 1.5 <= ratio <= 1.5):
        errors.append(f"whatif {fix}: predicted {pred / 1e6:.2f} ms is not within 1.5x of the saving {real / 1e6:.2f} ms")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
PY
done
# Work off the critical path (two threads, two devices): thread 2's tiny launches are launch-bound, but
# thread 1's GPU-bound steps set the end of the run. The finding's predicted saving must stay under 1.5x what
# the graph really saves (the walls' medians, bad - fixed: about nothing; 1% of the wall allowed for noise)
# and the report must name thread 2 as off the critical path.
if [ -z "${SAVINGS_ONLY:-}" ] || [[ " $SAVINGS_ONLY " == *" offpath-tiny "* ]]; then
    for mode in offpath-tiny offpath-graph; do
        SIMCUDA_DEVICES=2 "$cli" record --sim --repeat 3 -f -o "$mode.gspy" -- "$prog" "$mode" >/dev/null 2>"$mode.err" &&
            "$cli" report --format json "$mode.gspy" > "$mode.json" ||
            { echo "FAIL: record/report $mode"; cat "$mode.err"; fail=1; }
    done
    [ -s offpath-tiny.json ] && [ -s offpath-graph.json ] && python3 - <<'PY' || fail=1
import json, statistics, sys
bad, fixed = (json.load(open(f"offpath-{m}.json")) for m in ("tiny", "graph"))
walls = lambda r: statistics.median(run["headline"]["wall_ns"] for run in r["runs"])
real = walls(bad) - walls(fixed)
errors = []
found = [f for f in bad["findings"] if f["rule"] == "launch-bound-kernels"]
if not found or not found[0].get("prediction"):
    errors.append("offpath-tiny: no launch-bound-kernels finding with a prediction")
else:
    pred = found[0]["estimated_savings_ns"]
    allowed = 1.5 * max(real, 0) + 0.01 * walls(bad)
    print(f"off the critical path: launch-bound-kernels predicted {pred / 1e6:.2f} ms (formula "
          f"{found[0]['prediction']['formula_saving_ns'] / 1e6:.2f} ms), the graph saved {real / 1e6:.2f} ms of "
          f"{walls(bad) / 1e6:.1f} ms; allowed {allowed / 1e6:.2f} ms")
    if pred > allowed:
        errors.append(f"offpath: predicted {pred / 1e6:.2f} ms, more than 1.5x the {real / 1e6:.2f} ms the fix saved")
    # The self-test of the pair: the rule's own formula over totals (what the report said before the
    # replay) fails it, so the pair tells the two apart. Held to what the design says the graph saves (thread
    # 2 ends long before thread 1: nothing; the formula must claim over 2% of the wall), not to the measured
    # difference, which a loaded machine moves by several ms either way (8.9 ms once under four parallel builds).
    if found[0]["prediction"]["formula_saving_ns"] <= 0.02 * walls(bad):
        errors.append(f"offpath: the rule's formula ({found[0]['prediction']['formula_saving_ns'] / 1e6:.2f} ms) passes the "
                      "pair too: it no longer tells a prediction from the formula")
off = [t["thread"] for cp in bad["critical_path"] for t in cp["off_path"] if t["cuda_ns"] > 0.01 * walls(bad)]
if len(off) != 1:
    errors.append(f"offpath: the report names {off} off the critical path, not the launching thread alone")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
PY
fi
[ $fail -eq 0 ] && echo "savings: all checks passed"
exit $fail
