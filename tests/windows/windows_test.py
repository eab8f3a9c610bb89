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
