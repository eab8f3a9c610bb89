#!/usr/bin/env python3
"""Capture windows end to end: gpuspy record --sim with --capture-range/--delay/--duration on
server_loop (tests/windows/server_loop.cu), whose brackets hold known launch counts; the JSON report's
capture_windows must count exactly those. Usage: windows_test.py GPUSPY SERVER_LOOP CASE"""
import json
import os
import re
import subprocess
import sys

cli, app, case = sys.argv[1], sys.argv[2], sys.argv[3]


def fail(msg):
    print("FAIL %s: %s" % (case, msg))
    sys.exit(1)


def record(options, app_args=("brackets",), expect_rc=0, env=None):
    out = "%s.gspy" % case
    argv = [cli, "record", "--sim", "-f", "-o", out, "--format", "json"] + list(options) + ["--", app] + list(app_args)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=100,
                       env=dict(os.environ, **(env or {})))
    if p.returncode != expect_rc:
        fail("%s exited %d: %s" % (argv, p.returncode, p.stderr))
    return json.loads(p.stdout), p


def windows(report):
    cw = report["capture_windows"]
    if not cw["used"]:
        fail("the report says no windows were used")
    return cw


def launches(report):
    return [w["launches"] for w in windows(report)["windows"]]


def expect(what, got, want):
    if got != want:
        fail("%s: got %r, want %r" % (what, got, want))


def rules(report):
    return [f["rule"] for f in report["findings"]]


def bad(options, message):
    p = subprocess.run([cli, "record", "--sim", "-f", "-o", "bad.gspy"] + options + ["--", app, "brackets"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=100)
    expect("exit status", p.returncode, 2)
    lines = p.stderr.strip().splitlines()
    expect("stderr lines", len(lines), 1)
    if message not in lines[0]:
        fail("stderr %r lacks %r" % (lines[0], message))


# server_loop brackets: 10 warm-up launches; cudaProfilerStart/Stop around 4, 8, 12 launches (10 after
# each); NVTX "step" around 3, 6, 9 ("other": 10 each); "step" in domain "dom": 5; "idle": none; 10 at the end.
TOTAL_LAUNCHES = 10 + (4 + 8 + 12) + 30 + (3 + 6 + 9) + 30 + 5 + 10

if case == "profiler_stop":
    r, _ = record(["--capture-range", "cudaProfilerApi"])
    expect("launches per window", launches(r), [4])
    cw = windows(r)
    expect("trigger", cw["windows"][0]["trigger"], "cudaProfilerApi")
    expect("launches left out", cw["left_out_launches"], TOTAL_LAUNCHES - 4)
    expect("calls recorded", r["launches"]["count"], 4)
elif case == "profiler_repeat":
    r, _ = record(["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"])
    expect("launches per window", launches(r), [4, 8, 12])
    expect("launches left out", windows(r)["left_out_launches"], TOTAL_LAUNCHES - 24)
    expect("left out before window 2", windows(r)["windows"][1]["left_out_launches_before"], 10)
elif case == "profiler_truth":
    # Against the simulated driver's ground truth: each window lies between the cuProfilerStart that
    # opened it and the cuProfilerStop that closed it (SIMCUDA_TRACE "profiler" lines, times inside
    # those calls; the shim opens after the start returned and closes before the stop is called).
    trace = os.path.abspath("%s.trace.jsonl" % case)
    if os.path.exists(trace):
        os.unlink(trace)
    r, _ = record(["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"], env={"SIMCUDA_TRACE": trace})
    truth = [json.loads(l) for l in open(trace) if '"profiler"' in l]
    starts = [t["t"] for t in truth if t["what"] == "start" and t["changed"]]
    stops = [t["t"] for t in truth if t["what"] == "stop" and t["changed"]]
    expect("profiler starts and stops in the trace", (len(starts), len(stops)), (3, 3))
    dump = subprocess.run([cli, "dump", "%s.gspy" % case], stdout=subprocess.PIPE, text=True, check=True).stdout
    edges = {}
    for m in re.finditer(r"Window t=(\d+) index=(\d+) edge=(\d)", dump):
        edges[(int(m.group(2)), int(m.group(3)))] = int(m.group(1))
    for i in range(3):
        begin, end = edges.get((i + 1, 1)), edges.get((i + 1, 2))
        if begin is None or end is None:
            fail("window %d's edges are missing from the capture: %r" % (i + 1, edges))
        if not (starts[i] <= begin <= end <= stops[i]):
            fail("window %d [%d, %d] is not inside the driver's start %d and stop %d" % (i + 1, begin, end, starts[i], stops[i]))
    expect("launches per window", launches(r), [4, 8, 12])
elif case == "profiler_repeat_2":
    r, _ = record(["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat:2"])
    expect("launches per window", launches(r), [4, 8])
elif case == "nvtx_repeat":
    r, _ = record(["--capture-range", "nvtx:step", "--capture-range-end", "repeat"])
    expect("launches per window", launches(r), [3, 6, 9])  # not the "step" of domain "dom"
    expect("trigger", windows(r)["windows"][0]["trigger"], "nvtx")
elif case == "nvtx_domain":
    r, _ = record(["--capture-range", "nvtx:step@dom"])
    expect("launches per window", launches(r), [5])
elif case == "nvtx_empty":
    r, p = record(["--capture-range", "nvtx:idle"])
    cw = windows(r)
    expect("windows", len(cw["windows"]), 1)
    expect("empty", (cw["windows"][0]["empty"], cw["empty_windows"]), (True, 1))
    if rules(r)[:1] != ["empty-capture-window"]:
        fail("the empty window is not the first finding: %r" % rules(r))
    text = subprocess.run([cli, "report", "%s.gspy" % case], stdout=subprocess.PIPE, text=True).stdout
    if "EMPTY WINDOW" not in text:
        fail("the text report does not say EMPTY WINDOW:\n" + text)
elif case == "nvtx_never":
    r, _ = record(["--capture-range", "nvtx:nothere"])
    cw = windows(r)
    expect("windows", cw["windows"], [])
    expect("launches left out", cw["left_out_launches"], TOTAL_LAUNCHES)
    if "empty-capture-window" not in rules(r):
        fail("no finding for a window that never opened: %r" % rules(r))
    text = subprocess.run([cli, "report", "%s.gspy" % case], stdout=subprocess.PIPE, text=True).stdout
    if "NO WINDOW OPENED" not in text:
        fail("the text report does not say NO WINDOW OPENED:\n" + text)
elif case == "delay_duration":
    # One launch a millisecond for 4 s; the window opens 0.5 s after the start and lasts 0.5 s. Only
    # bounds a loaded machine cannot break: a window closes no earlier than its duration (later, when
    # the shim's own thread is held up, but by its timer: ended by "time", before the process ended),
    # and something was left out before it (the delay).
    r, _ = record(["--delay", "0.5", "--duration", "0.5"], ("timed", "4000"))
    cw = windows(r)
    expect("windows", len(cw["windows"]), 1)
    w = cw["windows"][0]
    expect("trigger", (w["trigger"], w["ended_by"]), ("time", "time"))
    length = w["end_ns"] - w["begin_ns"]
    if length < 500_000_000:
        fail("window length %d ns, want at least 0.5 s" % length)
    if not (0 < w["launches"] < cw["left_out_launches"] + w["launches"]):
        fail("launches inside %d, left out %d" % (w["launches"], cw["left_out_launches"]))
    if w["left_out_before"] == 0:
        fail("nothing left out before a delayed window")
elif case == "duration_only":
    # --duration alone: recording from the very first call, for at least the duration.
    r, _ = record(["--duration", "0.5"], ("timed", "2500"))
    cw = windows(r)
    expect("windows", len(cw["windows"]), 1)
    w = cw["windows"][0]
    expect("trigger", (w["trigger"], w["ended_by"]), ("time", "time"))
    expect("left out before", w["left_out_before"], 0)
    # Its length is not checked here: the duration counts from the library's load, the report's times
    # from the process's first CUDA call (cudart's start-up, of any length on a loaded machine, lies
    # between). delay_duration checks the length of a window that opens after the start.
    if w["launches"] == 0:
        fail("no launch recorded in the window")
    if cw["left_out_launches"] == 0:
        fail("nothing left out after the window")
elif case == "dormant_counts":
    # Every launch is either recorded in a window or counted as left out: none is lost.
    r, _ = record(["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"])
    cw = windows(r)
    expect("recorded + left out", sum(launches(r)) + cw["left_out_launches"], TOTAL_LAUNCHES)
elif case == "dormant_gap":
    # GPU times across a dormant gap (server_loop gap): between two cudaProfilerStart/Stop windows the
    # stream keeps working (gap_long, kGapNs, launched outside both), so each window after the first
    # opens with its first launch queued behind that work. Every span the capture timed must match the
    # simulated driver's trace (SIMCUDA_TRACE); the first launch after a gap must not start from the
    # stream's last end event of the window before (that would stretch it over the gap's work).
    gap_ns = 20000000
    trace = os.path.abspath("%s.trace.jsonl" % case)
    if os.path.exists(trace):
        os.unlink(trace)
    r, _ = record(["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"], app_args=("gap",),
                  env={"SIMCUDA_TRACE": trace, "SIMCUDA_KERNEL_NS": "gap_long=%d" % gap_ns, "GPUSPY_GPU_BUDGET": "100"})
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "server_loop.cu")).read()
    rounds = int(re.search(r"kGapRounds = (\d+);", src).group(1))
    per = int(re.search(r"kGapLaunches = (\d+);", src).group(1))
    expect("launches per window", launches(r), [per] * rounds)
    kernels = [json.loads(l) for l in open(trace) if '"op":"kernel"' in l]
    gaps = [k for k in kernels if "gap_long" in k["name"]]
    steps = [k for k in kernels if "step_kernel" in k["name"]]
    expect("gap kernels in the trace", len(gaps), rounds)
    # The first step launch after each gap, when it queued behind the gap's work (submitted while
    # gap_long ran, started when it ended; a thread descheduled for the whole gap submits too late).
    behind = set()
    for g in gaps:
        after = [k for k in steps if k["submit"] > g["submit"]]
        if after and after[0]["submit"] < g["end"] and after[0]["start"] >= g["end"]:
            behind.add(id(after[0]))
    dump = subprocess.run([cli, "dump", "%s.gspy" % case], stdout=subprocess.PIPE, text=True, check=True).stdout
    calls = {int(m.group(1)): (int(m.group(2)), int(m.group(3)))
             for m in re.finditer(r"Call #(\d+) cuLaunchKernel\S* launch tid=\d+ t=(\d+)\.\.(\d+)", dump)}
    spans = {int(m.group(1)): (int(m.group(2)), int(m.group(3)))
             for m in re.finditer(r"GpuSpan #(\d+) dev=-?\d+ t=(\d+)\.\.(\d+)", dump)}
    # Within a quarter of the gap: the events place a span within microseconds of the truth, and a span
    # that borrowed a begin from before the gap is off by the gap's kernel.
    tolerance = gap_ns // 4
    checked = checked_behind = 0
    for seq, (b, e) in sorted(spans.items()):
        if seq not in calls:
            continue
        t0, t1 = calls[seq]
        truth = [k for k in steps if t0 <= k["submit"] <= t1]
        if len(truth) != 1:
            fail("call #%d [%d, %d] matches %d step launches in the trace" % (seq, t0, t1, len(truth)))
        k = truth[0]
        if abs(b - k["start"]) > tolerance or abs(e - k["end"]) > tolerance:
            fail("call #%d's span [%d, %d] (%d ns) is not the driver's [%d, %d] (%d ns)%s"
                 % (seq, b, e, e - b, k["start"], k["end"], k["end"] - k["start"],
                    ": the first launch after a dormant gap" if id(k) in behind else ""))
        checked += 1
        checked_behind += id(k) in behind
    print("%d spans match the trace, %d of them first after a gap" % (checked, checked_behind))
    if checked_behind == 0:
        # Each such launch's span is dropped when its thread was held up in the call, and one submitted
        # after the gap's work ended has nothing to borrow (a busy machine): nothing wrong found.
        print("SKIP %s: no launch queued behind a gap's work kept its span (%d did queue)" % (case, len(behind)))
        sys.exit(77)
elif case == "bad_range":
    bad(["--capture-range", "nvtx"], "unknown --capture-range 'nvtx'")
elif case == "bad_end":
    bad(["--capture-range", "cudaProfilerApi", "--capture-range-end", "again"], "unknown --capture-range-end 'again'")
elif case == "bad_seconds":
    bad(["--delay", "soon"], "--delay wants seconds")
elif case == "end_without_range":
    bad(["--capture-range-end", "repeat"], "--capture-range-end needs --capture-range")
else:
    fail("unknown case")
print("ok %s" % case)
