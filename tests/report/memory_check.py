#!/usr/bin/env python3
"""memory_check.py: the report's GPU memory section against tests/apps/gpu_memory's own truth (memory.sh).

usage: memory_check.py PLAIN_OUT REPORT_JSON REPORT_TXT TRACE_DIR
  PLAIN_OUT    the program's stdout (its "truth <section> key=value..." lines)
  REPORT_JSON  `gpuspy report --format json` of its capture
  REPORT_TXT   `gpuspy report` of the same capture
  TRACE_DIR    the simulated driver's trace of the recorded run (SIMCUDA_TRACE_CALLS=1), *.jsonl
Prints one ok/FAIL line a check; exit status 1 if any failed, 2 if the truth cannot be read."""
import glob, json, sys

plain, report_path, text_path, trace_dir = sys.argv[1:5]
bad = 0


def check(ok, what, detail=""):
    global bad
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail else ""))
    bad += not ok
    return ok


# ---- the program's truth ------------------------------------------------------------------------
truth = {}
for line in open(plain):
    words = line.split()
    if words[:1] == ["truth"] and len(words) >= 2:
        truth[words[1]] = dict(w.split("=", 1) for w in words[2:])
for section in ("totals", "at_peak", "at_failure", "live_at_end"):
    if section not in truth:
        print(f"FAIL the program printed no 'truth {section}' line")
        sys.exit(2)
T = {k: int(v) for k, v in truth["totals"].items()}


def held(section):  # function -> (bytes, allocations)
    return {f: tuple(int(x) for x in v.split("/")) for f, v in truth[section].items()}


at_peak_truth, at_failure_truth, live_truth = held("at_peak"), held("at_failure"), held("live_at_end")
leak_each = live_truth["leaky_step"][0] // live_truth["leaky_step"][1]
temp_each = at_peak_truth["make_temp"][0] // at_peak_truth["make_temp"][1]
MiB = 1 << 20
print(f"truth: device peak {T['device_peak_bytes'] / MiB:g} MiB at step {T['peak_step']}, "
      f"{T['leak_allocations']} leaks of {leak_each / MiB:g} MiB, failed {T['failed_bytes'] / MiB:g} MiB "
      f"with {T['in_use_at_failure_bytes'] / MiB:g} MiB in use, pinned peak {T['pinned_peak_bytes'] / MiB:g} MiB, "
      f"managed at end {T['managed_end_bytes'] / MiB:g} MiB")

# ---- the driver's trace: every cuMemAlloc_v2 is one of the program's (cudart made none of its own) ----
alloc_calls = []
for path in sorted(glob.glob(f"{trace_dir}/*.jsonl")):
    for line in open(path):
        if '"cuMemAlloc_v2"' in line:
            rec = json.loads(line)
            if rec.get("type") == "call" and rec.get("api") == "cuMemAlloc_v2":
                alloc_calls.append((rec.get("start", 0), rec.get("rc")))
alloc_rcs = [rc for _, rc in sorted(alloc_calls)]
check(alloc_rcs.count(0) == T["device_allocations"] and len(alloc_rcs) == T["device_allocations"] + T["failed_allocations"]
      and alloc_rcs[-1:] == [2] and alloc_rcs.count(2) == T["failed_allocations"],
      "trace: the driver's cuMemAlloc_v2 calls are the program's own, the last one failed out of memory (2)",
      f"{alloc_rcs.count(0)} succeeded (program: {T['device_allocations']}), return codes of the others: "
      f"{[rc for rc in alloc_rcs if rc != 0]}, last {alloc_rcs[-1:]}")

# ---- the report ---------------------------------------------------------------------------------
rep = json.load(open(report_path))
rows = rep.get("memory")
if not isinstance(rows, list) or not rows:
    print(f"FAIL report.json has no \"memory\" rows (keys: {sorted(rep)})")
    sys.exit(1)
label_of = {c["id"]: c["label"] for c in rep.get("callsites", [])}
pids = {p["pid"] for p in rep.get("processes", [])}
check(len(pids) == 1 and all(r.get("pid") in pids for r in rows), "memory rows: all of the program's one process",
      f"row pids {sorted({r.get('pid') for r in rows})}, processes {sorted(pids)}")


def names(entry, fn):
    return fn + "(" in entry.get("label", "")


def by_function(entries, what):
    """{function: entry} for the truth's functions; entries naming none of them under None (a list)."""
    out, other = {}, []
    for e in entries:
        fns = [f for f in ("load_weights", "make_temp", "leaky_step", "big_intermediate", "too_big", "pin_staging",
                           "make_managed") if names(e, f)]
        if len(fns) == 1 and fns[0] not in out:
            out[fns[0]] = e
        else:
            other.append(e)
        cs = e.get("callsite")
        if cs is not None and label_of.get(cs) != e.get("label"):
            check(False, f"{what}: entry's callsite id names its label",
                  f"callsite {cs} is '{label_of.get(cs)}' in callsites[], entry says '{e.get('label')}'")
    out[None] = other
    return out


def row(space, device=None):
    found = [r for r in rows if r.get("space") == space and (device is None or r.get("device") == device)]
    if not check(len(found) == 1, f"one '{space}' row" + (f" for device {device}" if device is not None else ""),
                 f"{len(found)} of them"):
        return None
    return found[0]


def same(r, key, want, what):
    got = r.get(key)
    return check(got == want, f"{what}: {key} = {want}", f"report has {got}")


spaces = sorted((r.get("space"), r.get("device")) for r in rows)
check(sorted(s for s, _ in spaces) == ["device", "managed", "pinned_host"], "memory rows: device, managed, pinned_host",
      f"rows (space, device): {spaces}")

dev = row("device", 0)
if dev:
    w = "device row"
    same(dev, "allocations", T["device_allocations"], w)
    same(dev, "releases", T["device_releases"], w)
    same(dev, "failed", T["failed_allocations"], w)
    same(dev, "allocated_bytes", T["device_allocated_bytes"], w)
    same(dev, "unknown_releases", 0, w)
    same(dev, "in_use_end_bytes", T["device_leaked_bytes"], w)
    peak, want = dev.get("peak_bytes", -1), T["device_peak_bytes"]
    check(abs(peak - want) <= temp_each, f"{w}: peak_bytes within one temporary ({temp_each} bytes) of {want}",
          f"report has {peak} ({'exact' if peak == want else f'off by {peak - want:+d}'})")

    # Who held the peak: the big intermediate, the weights, one temporary, the leaks made so far (+-1).
    at_peak = dev.get("at_peak", [])
    check([e["bytes"] for e in at_peak] == sorted((e["bytes"] for e in at_peak), reverse=True),
          f"{w}: at_peak largest first", str([e["bytes"] for e in at_peak]))
    check(sum(e["bytes"] for e in at_peak) == peak, f"{w}: at_peak adds up to peak_bytes",
          f"{sum(e['bytes'] for e in at_peak)} vs {peak}")
    got = by_function(at_peak, "at_peak")
    for fn, (b, n) in at_peak_truth.items():
        e = got.get(fn)
        if fn == "leaky_step":
            ok = e is not None and abs(e["allocations"] - n) <= 1 and e["bytes"] == e["allocations"] * leak_each
            check(ok, f"{w}: at_peak leaky_step holds {n} +-1 leaks of {leak_each} bytes",
                  f"report has {e and (e['bytes'], e['allocations'])}")
        else:
            check(e is not None and (e["bytes"], e["allocations"]) == (b, n), f"{w}: at_peak {fn} = {b} bytes / {n}",
                  f"report has {e and (e['bytes'], e['allocations'])}")
    extra = [e.get("label") for k, e in got.items() if k is not None and k not in at_peak_truth] + \
            [e.get("label") for e in got[None]]
    check(not extra, f"{w}: at_peak names no other site", str(extra))

    # When: inside the loop (between the first and the last leak), before the failure, and the series' top.
    peak_ns = dev.get("peak_at_ns", -1)
    series = dev.get("series", [])
    check(bool(series) and all(a[0] <= b[0] for a, b in zip(series, series[1:])), f"{w}: series in time order",
          f"{len(series)} points")
    if series:
        check(max(p[1] for p in series) == peak and [peak_ns, peak] in [list(p) for p in series],
              f"{w}: series peaks at [peak_at_ns, peak_bytes]",
              f"series max {max(p[1] for p in series)}, points at peak_at_ns: {[p for p in series if p[0] == peak_ns]}")
        check(series[-1][1] == dev.get("in_use_end_bytes"), f"{w}: series ends at in_use_end_bytes",
              f"last point {series[-1]}")

    # At exit: the leaks only, called a leak; the weights were freed.
    live = dev.get("live_at_end", [])
    got = by_function(live, "live_at_end")
    e = got.get("leaky_step")
    b, n = live_truth["leaky_step"]
    check(e is not None and (e["bytes"], e["allocations"], e.get("kind")) == (b, n, "leak"),
          f"{w}: live_at_end leaky_step = {b} bytes / {n}, kind leak",
          f"report has {e and (e['bytes'], e['allocations'], e.get('kind'))}")
    if e is not None:
        check(e.get("first_at_ns", -1) < peak_ns < e.get("last_at_ns", -1),
              f"{w}: peak_at_ns inside the loop (after the first leak, before the last)",
              f"first {e.get('first_at_ns')}, peak {peak_ns}, last {e.get('last_at_ns')}")
    check("load_weights" not in got, f"{w}: load_weights not live at end (freed)")
    other = [x.get("label") for k, x in got.items() if k is not None and k not in live_truth] + \
            [x.get("label") for x in got[None]]
    check(not other, f"{w}: nothing else live at end", str(other))
    leaks = [x.get("label") for x in live if x.get("kind") == "leak" and not names(x, "leaky_step")]
    check(not leaks, f"{w}: nothing else called a leak", str(leaks))

    # The failure: too_big's 512 MiB, out of memory, with the weights and the leaks held.
    fails = dev.get("failures", [])
    if check(len(fails) == T["failed_allocations"], f"{w}: {T['failed_allocations']} failure(s)", f"report has {len(fails)}"):
        f = fails[0]
        same(f, "bytes", T["failed_bytes"], f"{w} failure")
        same(f, "error", "CUDA_ERROR_OUT_OF_MEMORY", f"{w} failure")
        check("cuMemAlloc" in f.get("api", ""), f"{w} failure: api cuMemAlloc*", f"report has {f.get('api')}")
        check(names(f, "too_big"), f"{w} failure: at too_big", f"label '{f.get('label')}'")
        if f.get("callsite") is not None:
            check(label_of.get(f["callsite"]) == f.get("label"), f"{w} failure: callsite id names its label",
                  f"callsite {f['callsite']} is '{label_of.get(f['callsite'])}'")
        same(f, "in_use_bytes", T["in_use_at_failure_bytes"], f"{w} failure (exact: cudart allocated nothing itself)")
        check(f.get("at_ns", -1) > peak_ns, f"{w} failure: after the peak", f"at {f.get('at_ns')}, peak at {peak_ns}")
        hold = by_function(f.get("holders", []), "failure holders")
        for fn, (b, n) in at_failure_truth.items():
            h = hold.get(fn)
            check(h is not None and (h["bytes"], h["allocations"]) == (b, n), f"{w} failure: holder {fn} = {b} bytes / {n}",
                  f"report has {h and (h['bytes'], h['allocations'])}")
        other = [x.get("label") for k, x in hold.items() if k is not None and k not in at_failure_truth] + \
                [x.get("label") for x in hold[None]]
        check(not other, f"{w} failure: no other holder", str(other))

pin = row("pinned_host")
if pin:
    w = "pinned_host row"
    same(pin, "device", -1, w)
    same(pin, "allocations", T["pinned_allocations"], w)
    same(pin, "peak_bytes", T["pinned_peak_bytes"], w)
    same(pin, "in_use_end_bytes", T["pinned_end_bytes"], w)
    check(not pin.get("live_at_end") and not pin.get("failures"), f"{w}: nothing live at end, no failure",
          f"live {pin.get('live_at_end')}, failures {pin.get('failures')}")
    at = by_function(pin.get("at_peak", []), "pinned at_peak")
    check("pin_staging" in at and at["pin_staging"]["bytes"] == T["pinned_peak_bytes"], f"{w}: at_peak pin_staging",
          str(pin.get("at_peak")))

man = row("managed")
if man:
    w = "managed row"
    same(man, "allocations", T["managed_allocations"], w)
    same(man, "in_use_end_bytes", T["managed_end_bytes"], w)
    same(man, "failed", 0, w)
    live = man.get("live_at_end", [])
    e = by_function(live, "managed live_at_end").get("make_managed")
    check(len(live) == 1 and e is not None
          and (e["bytes"], e["allocations"], e.get("kind")) == (T["managed_end_bytes"], T["managed_allocations"], "kept"),
          f"{w}: live_at_end make_managed = {T['managed_end_bytes']} bytes / {T['managed_allocations']}, kind kept",
          f"report has {[(x.get('label'), x.get('bytes'), x.get('allocations'), x.get('kind')) for x in live]}")

# ---- the finding --------------------------------------------------------------------------------
leak_ids = {i for i, l in label_of.items() if "leaky_step(" in l}
findings = [f for f in rep.get("findings", []) if f.get("rule") == "memory-leak"]
named = [f for f in findings if leak_ids & set(f.get("callsites", []))]
check(len(named) >= 1, "finding memory-leak at leaky_step",
      f"memory-leak findings' sites: {[[label_of.get(i) for i in f.get('callsites', [])] for f in findings]}")
wrong = [label_of.get(i) for f in findings for i in f.get("callsites", [])
         if any(fn + "(" in (label_of.get(i) or "") for fn in ("load_weights", "make_temp", "big_intermediate", "make_managed", "pin_staging"))]
check(not wrong, "finding memory-leak names no freed or kept site", str(wrong))

big_ids = {i for i, l in label_of.items() if "big_intermediate(" in l}
peaks = [f for f in rep.get("findings", []) if f.get("rule") == "memory-peak"]
check(len(peaks) == 1 and big_ids & set(peaks[0].get("callsites", [])),
      "finding memory-peak: the peak is set by big_intermediate's intermediate",
      f"memory-peak findings' sites: {[[label_of.get(i) for i in f.get('callsites', [])] for f in peaks]}")
fails_f = [f for f in rep.get("findings", []) if f.get("rule") == "allocation-failed"]
check(len(fails_f) == 1 and {i for i, l in label_of.items() if "too_big(" in l} & set(fails_f[0].get("callsites", [])),
      "finding allocation-failed at too_big", str([f.get("message") for f in fails_f]))

# ---- the text report ----------------------------------------------------------------------------
text = open(text_path).read().splitlines()
heads = [i for i, l in enumerate(text) if "GPU memory" in l]
if check(bool(heads), "text report: a 'GPU memory' heading"):
    start = heads[0]
    end = next((i for i in range(start + 1, len(text)) if text[i].startswith("==")), len(text))
    section = "\n".join(text[start:end])
    check("leaky_step" in section, "text report: the GPU memory section names leaky_step",
          f"section lines {start + 1}-{end}")

print(f"memory_check.py: {'FAIL' if bad else 'ok'}: {bad} check(s) failed")
sys.exit(1 if bad else 0)