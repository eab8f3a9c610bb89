#!/usr/bin/env python3
"""tests/collector/ring_test.py: the flight recorder of `gpuspy collect --ring SECONDS`.

- snapshot: a running process (ring_client --hold) launched kernel phase_a 1000 times, then 20 s later
  (its own clock) phase_b 300 times; with --ring 5, `gpuspy ctl snapshot` writes a capture whose report
  counts 300 phase_b launches and no phase_a; SIGUSR1 writes the same into the collector's directory;
  the end of the run writes it to -o.
- the bound over a long run: 1,000,000 launches over 100 s of the stream's clock; the ring holds at most
  its window's events (--ring 2), at most --ring-max MiB (--ring 3600 --ring-max 1), and the
  collector's peak RSS stays far below the bytes sent.
- bad input: a snapshot with nothing in the ring, of a collector without a ring, of a dead socket,
  each one line on stderr and exit status 1.

usage: ring_test.py GPUSPY RING_CLIENT
"""
import glob
import json
import os
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


def ring_status(sock):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock + ".ctl")  # the collector's control socket
    s.sendall(b"ring\n")
    data = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        data += b
    s.close()
    words = data.decode().split()
    assert words[0] == "ok", data
    return {words[i]: float(words[i + 1]) for i in range(1, len(words) - 1, 2)}


def start_collector(d, name, *args):
    sock = os.path.join(d, name + ".sock")
    err = open(os.path.join(d, name + ".err"), "w")
    p = subprocess.Popen([cli, "collect", "--socket", sock, *args], stderr=err, stdout=subprocess.DEVNULL, cwd=d)
    while True:  # the control socket listens after the stream socket: wait until it does
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(sock + ".ctl")
            c.close()
            break
        except (FileNotFoundError, ConnectionRefusedError):
            assert p.poll() is None, open(err.name).read()
            time.sleep(0.05)
    return p, sock, err.name


def wait_events(sock, n):
    # The client has sent everything; the collector reads it as fast as it can (no time limit: a
    # loaded machine only makes this slower).
    while True:
        st = ring_status(sock)
        if st["held_events"] + st["trimmed_events"] + st["evicted_events"] >= n:
            return st
        time.sleep(0.1)


def ctl(*args, cwd=None):
    return subprocess.run([cli, "ctl", *args], capture_output=True, text=True, cwd=cwd)


def kernels(capture):
    r = subprocess.run([cli, "report", "--format", "json", capture], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {k["name"]: k["count"] for k in json.loads(r.stdout)["kernels"]}


def finish(p):
    p.send_signal(signal.SIGINT)
    return p.wait()


with tempfile.TemporaryDirectory() as d:
    # Snapshot of a running process.
    col, sock, err = start_collector(d, "snap", "--ring", "5", "-o", os.path.join(d, "end.gspy"))
    app = subprocess.Popen([client, sock, "--hold", "phase_a=1000@0/1000", "phase_b=300@20/1000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    app.stdout.readline()
    st = wait_events(sock, 2600)
    check(st["held_events"] == 600, f"the ring holds phase_b's 300 calls and 300 spans ({st['held_events']:g})")
    snap = os.path.join(d, "snap.gspy")
    r = ctl("--socket", sock, "snapshot", "-o", "snap.gspy", cwd=d)
    check(r.returncode == 0 and "300 calls" in r.stderr, f"ctl snapshot succeeds: {r.stderr.strip()}")
    k = kernels(snap)
    check(k.get("phase_b") == 300 and "phase_a" not in k, f"the snapshot's report: 300 phase_b, no phase_a ({k})")
    r = ctl("--socket", sock, "snapshot", "-o", "snap.gspy", cwd=d)
    check(r.returncode == 1 and "already exists" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"an existing file is not overwritten without -f: {r.stderr.strip()}")
    spaced = os.path.join(d, " a  spaced name .gspy")
    r = ctl("--socket", sock, "snapshot", "-o", os.path.basename(spaced), cwd=d)
    k = kernels(spaced) if r.returncode == 0 and os.path.exists(spaced) else {}
    check(k.get("phase_b") == 300, f"a file name with spaces (two in a row, at both ends): {r.stderr.strip()} {k}")
    col.send_signal(signal.SIGUSR1)
    while not glob.glob(os.path.join(d, "gpuspy-snapshot-*.gspy")) or "SIGUSR1" not in open(err).read():
        time.sleep(0.1)
    usr1 = glob.glob(os.path.join(d, "gpuspy-snapshot-*.gspy"))[0]
    k = kernels(usr1)
    check(k.get("phase_b") == 300 and "phase_a" not in k, f"SIGUSR1's snapshot: 300 phase_b, no phase_a ({k})")
    app.stdin.close()
    app.wait()
    rc = finish(col)
    k = kernels(os.path.join(d, "end.gspy"))
    check(rc == 0 and k.get("phase_b") == 300 and "phase_a" not in k, f"the end writes the ring to -o ({rc}, {k})")

    # Nothing in the ring.
    col, sock, err = start_collector(d, "empty", "--ring", "5")
    r = ctl("--socket", sock, "snapshot", "-o", "none.gspy", cwd=d)
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "nothing in the ring" in r.stderr
          and not os.path.exists(os.path.join(d, "none.gspy")), f"an empty ring: {r.stderr.strip()}")
    finish(col)
    # A collector without a ring; a dead socket.
    col, sock, err = start_collector(d, "plain", "-o", os.path.join(d, "plain.gspy"))
    r = ctl("--socket", sock, "snapshot", "-o", "none.gspy", cwd=d)
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "keeps no ring" in r.stderr,
          f"no ring: {r.stderr.strip()}")
    finish(col)
    r = ctl("--socket", os.path.join(d, "nobody.sock"), "snapshot", "-o", "none.gspy", cwd=d)
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "no collector at" in r.stderr,
          f"a dead socket: {r.stderr.strip()}")

    # The bound over a long run: by the window, then by bytes.
    for name, args, limit in (("window", ["--ring", "2"], None), ("bytes", ["--ring", "3600", "--ring-max", "1"], 1 << 20)):
        col, sock, err = start_collector(d, name, *args)
        out = subprocess.run([client, sock, "steady=1000000@0/100"], capture_output=True, text=True, check=True).stdout
        sent = int(out.split()[1])
        st = wait_events(sock, 2000000)
        if limit is None:
            # 2 s at one launch (a call and a span) per 100 us, plus the one that moved the window on.
            check(st["held_events"] <= 2 * 20001 and st["trimmed_events"] > 0,
                  f"--ring 2: {st['held_events']:g} events held, {st['trimmed_events']:g} trimmed")
        else:
            check(st["held_bytes"] <= limit and st["evicted_events"] > 0,
                  f"--ring-max 1: {st['held_bytes']:g} bytes held, {st['evicted_events']:g} evicted")
        r = ctl("--socket", sock, "snapshot", "-o", name + ".gspy", cwd=d)
        check(r.returncode == 0, f"snapshot after the long run: {r.stderr.strip()}")
        k = kernels(os.path.join(d, name + ".gspy"))
        check(0 < k.get("steady", 0) <= 20001, f"its report counts the window's launches only ({k})")
        col.send_signal(signal.SIGINT)
        _, status, ru = os.wait4(col.pid, 0)
        col.returncode = 0
        peak = ru.ru_maxrss * 1024
        if "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ:
            # scripts/test.sh's sanitizer phases: the runtime's shadow memory and ASan's quarantine of
            # freed blocks (up to 256 MiB) are in the RSS; the ring's own bounds are checked above.
            print(f"ok   (under a sanitizer the collector's peak RSS, {peak >> 20} MiB, is its runtime's; not checked)")
        else:
            check(peak * 4 < sent, f"the collector's peak RSS {peak >> 20} MiB is far below the {sent >> 20} MiB sent")

sys.exit(1 if failures else 0)
