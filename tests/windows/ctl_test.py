#!/usr/bin/env python3
"""Sessions: gpuspy collect --socket PATH --paused and gpuspy ctl --socket PATH start|stop|status against
a running server_loop (serve mode: a launch a millisecond until a stop file appears). Only what was
recorded between ctl start and ctl stop is in the capture; the rest is counted. No timing bounds: the
test waits for what it checks (calls received), with generous time limits.
Usage: ctl_test.py GPUSPY SERVER_LOOP SHIM SIMCUDA_DIR CASE"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

cli, app, shim, simdir, case = sys.argv[1:6]


def fail(msg):
    print("FAIL %s: %s" % (case, msg))
    sys.exit(1)


def ctl(sock, *request, expect_rc=0):
    p = subprocess.run([cli, "ctl", "--socket", sock] + list(request), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != expect_rc:
        fail("ctl %s exited %d (want %d): %s%s" % (request, p.returncode, expect_rc, p.stdout, p.stderr))
    return p


def received(sock):
    line = ctl(sock, "status").stdout
    return int(line.split(" calls received")[0].rsplit(" ", 1)[1])


def wait_for(what, cond, limit=60):
    end = time.time() + limit
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def session(*collect_args, app_env=None):
    work = tempfile.mkdtemp(prefix="gpuspy-ctl-")
    sock, out, stop = work + "/s", work + "/c.gspy", work + "/stop"
    col = subprocess.Popen([cli, "collect", "--socket", sock, "-o", out, "--paused", *collect_args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for("the control socket", lambda: os.path.exists(sock + ".ctl"))
    if "paused; 0 process(es)" not in ctl(sock, "status").stdout:
        fail("a new paused collector's status: " + ctl(sock, "status").stdout)
    env = dict(os.environ, GPUSPY_SOCKET=sock, LD_PRELOAD=shim, GPUSPY_PAUSED="1",
               LD_LIBRARY_PATH=simdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""), **(app_env or {}))
    srv = subprocess.Popen([app, "serve", "600000", stop], env=env)
    wait_for("the server to connect", lambda: "1 process(es) connected: %d" % srv.pid in ctl(sock, "status").stdout)
    time.sleep(0.3)  # it runs paused a while: its calls are counted, not recorded
    if received(sock) != 0:
        fail("calls recorded while paused")
    if "ok: recording in 1 process" not in ctl(sock, "start").stdout:
        fail("start did not reach the server")
    wait_for("calls while recording", lambda: received(sock) >= 200)
    if "ok: paused in 1 process" not in ctl(sock, "stop").stdout:
        fail("stop did not reach the server")
    # What it made before the stop arrived drains; then nothing more arrives.
    # What was made before the stop arrived drains; then the count stays put (left_out_after, checked
    # below, proves the calls after it were counted instead).
    last = [-1]

    def settled():
        n = received(sock)
        same = n == last[0]
        last[0] = n
        time.sleep(0.5)
        return same

    wait_for("the stream to settle after stop", settled, limit=120)
    n1 = last[0]
    open(stop, "w").close()
    if srv.wait(timeout=60) != 0:
        fail("the server exited %d" % srv.returncode)
    col.send_signal(signal.SIGINT)
    col.wait(timeout=60)
    report = json.loads(subprocess.run([cli, "report", "--format", "json", out], stdout=subprocess.PIPE,
                                       text=True, check=True).stdout)
    return report, n1


if case in ("start_stop", "start_stop_ring", "start_during_delay"):
    # start_stop_ring: the same session with a flight recorder (collect --ring), whose -o the end writes.
    # start_during_delay: the server's GPUSPY_DELAY (record --delay) is an hour: ctl start does not wait it
    # out (nor respect the window limit): the user's explicit word opens a window at once (README).
    r, recorded = session(*(["--ring", "3600"] if case == "start_stop_ring" else []),
                          app_env={"GPUSPY_DELAY": "3600"} if case == "start_during_delay" else None)
    cw = r["capture_windows"]
    if len(cw["windows"]) != 1:
        fail("windows: %r" % cw["windows"])
    w = cw["windows"][0]
    if (w["trigger"], w["ended_by"]) != ("control", "control"):
        fail("window opened by %s, closed by %s" % (w["trigger"], w["ended_by"]))
    if w["calls"] != r["processes"][0]["calls"] or w["calls"] < recorded or w["launches"] < 100:
        fail("window calls %d (status said %d), launches %d" % (w["calls"], recorded, w["launches"]))
    if w["left_out_before"] == 0 or cw["left_out_after"] == 0:
        fail("nothing counted before (%d) or after (%d) the window" % (w["left_out_before"], cw["left_out_after"]))
elif case == "dead_socket":
    p = ctl("/nonexistent/gpuspy.sock", "start", expect_rc=1)
    lines = p.stderr.strip().splitlines()
    if len(lines) != 1 or "no collector at /nonexistent/gpuspy.sock" not in lines[0]:
        fail("stderr: %r" % p.stderr)
elif case == "bad_request":
    p = ctl("/nonexistent/gpuspy.sock", "begin", expect_rc=2)
    lines = p.stderr.strip().splitlines()
    if len(lines) != 1 or "unknown request 'begin'" not in lines[0]:
        fail("stderr: %r" % p.stderr)
else:
    fail("unknown case")
print("ok %s" % case)
