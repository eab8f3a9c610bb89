#!/usr/bin/env python3
"""tests/collector/top_test.py: `gpuspy top --socket PATH` against a running collector.

A stand-in process (ring_client --loop, command "ring_server --serve") makes 400 launches, 20 pageable
copies and 10 stream syncs every 200 ms and stays connected. `gpuspy top` in a tmux pane shows it (capture-pane:
its pid and command, the GPU line, launches/s, the copy row, the syncs, the call sites); `gpuspy top
-n 2` into a pipe prints two plain-text frames without terminal escapes, each saying the collector records
(and, after `gpuspy ctl stop`, that it is paused); a dead socket is one line and exit status 1. Skipped (exit 77) only when tmux is absent.

usage: top_test.py GPUSPY RING_CLIENT
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

cli, client = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(d, sock, col, plain):
    tsock = os.path.join(d, "tmux.sock")
    app = subprocess.Popen([client, sock, "--loop", "busy_kernel=400@0/1000", "copy=20@1/1000", "sync=10@2/1000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    app.stdout.readline()
    out = plain.communicate()[0]
    check("\x1b" not in out and out.count("gpuspy top:") == 2, f"two plain-text frames into a pipe:\n{out}")
    check(out.count("state: recording; writing") == 2, f"each frame says the collector records, and where:\n{out}")
    # Paused (gpuspy ctl stop): the frame says so, and how to go on.
    subprocess.run([cli, "ctl", "--socket", sock, "stop"], capture_output=True, text=True, check=True)
    paused = subprocess.run([cli, "top", "--socket", sock, "-n", "1"], capture_output=True, text=True).stdout
    check("state: PAUSED" in paused and "gpuspy ctl start" in paused, f"a paused collector's frame says so:\n{paused}")
    subprocess.run([cli, "ctl", "--socket", sock, "start"], capture_output=True, text=True, check=True)
    if tmux:
        want = ["pid 5151  ring_server --serve", "GPU 0", "launches/s", "copy HtoD pageable sync", "blocked in syncs",
                "top call sites"]
        screen = ""
        # The figures of the second in which the records arrived, redrawn once a second: no time limit
        # here beyond the test's own (a loaded machine only makes this slower).
        while not all(w in screen for w in want):
            time.sleep(0.3)
            screen = subprocess.run([tmux, "-S", tsock, "capture-pane", "-p", "-t", "top"], capture_output=True,
                                    text=True).stdout
        check(all(w in screen for w in want), "capture-pane shows the process:\n" + screen)
    else:
        print("SKIP tmux not installed (scripts/deps.sh installs it)")
    r = subprocess.run([cli, "top", "--socket", os.path.join(d, "nobody"), "-n", "1"], capture_output=True, text=True)
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "no collector at" in r.stderr, f"a dead socket: {r.stderr.strip()}")
    app.stdin.close()
    app.wait()
    col.send_signal(signal.SIGINT)
    check(col.wait() == 0, "the collector finishes")



tmux = shutil.which("tmux")
with tempfile.TemporaryDirectory() as d:
    sock = os.path.join(d, "sock")
    err = open(os.path.join(d, "collect.err"), "w")
    col = subprocess.Popen([cli, "collect", "--socket", sock, "-o", os.path.join(d, "c.gspy")], stderr=err,
                           stdout=subprocess.DEVNULL)
    while True:  # the control socket listens after the stream socket: wait until it does
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(sock + ".ctl")
            c.close()
            break
        except (FileNotFoundError, ConnectionRefusedError):
            assert col.poll() is None, open(err.name).read()
            time.sleep(0.05)
    # The collector analyzes only while someone looks: top first, then the process.
    plain = subprocess.Popen([cli, "top", "--socket", sock, "-n", "2"], stdout=subprocess.PIPE, text=True)
    if tmux:
        tsock = os.path.join(d, "tmux.sock")
        subprocess.run([tmux, "-S", tsock, "new-session", "-d", "-x", "160", "-y", "60", "-s", "top",
                        f"{cli} top --socket {sock}; sleep 600"], check=True)
    time.sleep(0.5)
    try:
        run(d, sock, col, plain)
    finally:
        if tmux:
            subprocess.run([tmux, "-S", os.path.join(d, "tmux.sock"), "kill-server"], capture_output=True)

sys.exit(1 if failures else 77 if not tmux else 0)
