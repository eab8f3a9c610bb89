#!/usr/bin/env python3
"""tests/collector/metrics_sim_test.py: `gpuspy collect --metrics` on a running server with the real shim.

drv_serve_loop (launches, copies and synchronizes, a round about every millisecond, until its standard
input closes) runs on the simulated driver with the shim preloaded, sending to a collector started
with --metrics and --metrics-kernels 4. Scraped while it runs:
- gpuspy_shim_overhead_seconds_total is above 0 and grows between scrapes (the shim's running Tally,
  not only the threads' final figures);
- the per-device series carry DCGM exporter's labels: UUID (GPU-...), gpu, pci_bus_id, Hostname (this
  host's name);
- gpuspy_kernel_launches_by_name_total{kernel="drv_scale"} counts its launches (opt-in);
- after `gpuspy ctl stop`: gpuspy_recording 0, gpuspy_calls_not_recorded_total{category="launch"}
  grows while the recorded launch counter stands still; after `ctl start`: gpuspy_recording 1 and the
  launch counter moves again;
- `promtool check metrics` accepts a scrape (skipped, exit 77, where promtool is missing).
No time limit beyond ctest's: a loaded machine only makes it slower.

usage: metrics_sim_test.py GPUSPY SHIM SIMCUDA_DIR DRV_SERVE_LOOP
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from metrics_common import curl, free_port, series, start_collector

cli, shim, simdir, app = sys.argv[1:5]
failures = []
skipped = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def labels(s):
    return dict(re.findall(r'(\w+)="([^"]*)"', s))


def total(text, name, want=lambda l: True):
    return sum(v for k, v in series(text, name).items() if want(labels(k)))


with tempfile.TemporaryDirectory() as d:
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"

    def scrape():
        return curl(url).stdout

    def ctl(word):
        r = subprocess.run([cli, "ctl", "--socket", sock, word], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"gpuspy ctl {word}: {r.returncode} {r.stderr.strip()}")

    def wait_for(what, cond):
        """Scrapes until cond(text) holds; returns that text."""
        while True:
            text = scrape()
            if cond(text):
                return text
            assert col.poll() is None, open(err.name).read()
            assert server.poll() is None, f"drv_serve_loop ended ({what})"
            time.sleep(0.2)

    col, sock, err = start_collector(cli, d, port, "--metrics-kernels", "4")
    env = dict(os.environ, GPUSPY_SOCKET=sock, LD_PRELOAD=shim, LD_LIBRARY_PATH=simdir)
    server = subprocess.Popen([app], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(server.stdout.readline().strip() == "ready", "drv_serve_loop is serving")
        overhead = "gpuspy_shim_overhead_seconds_total"
        text = wait_for("overhead", lambda t: total(t, overhead) > 0 and total(t, "gpuspy_kernel_launches_total") > 0)
        first = total(text, overhead)
        text = wait_for("overhead grows", lambda t: total(t, overhead) > first)
        check(True, f"{overhead} grows while the process runs: {first:.6f} s, then {total(text, overhead):.6f} s")
        open(os.path.join(d, "running.txt"), "w").write(text)

        launches = series(text, "gpuspy_kernel_launches_total")
        check(len(launches) == 1, f"one launch series: {launches}")
        l = labels(next(iter(launches), ""))
        check(re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", l.get("UUID", "")) is not None
              and l.get("gpu") == "0" and l.get("device") == "0" and l.get("Hostname") == socket.gethostname()
              and re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F]", l.get("pci_bus_id", "")) is not None,
              f"DCGM exporter's labels on the per-device series: {l}")
        busy = series(text, "gpuspy_gpu_busy_ratio")
        check(all(labels(k).get("UUID") == l.get("UUID") for k in busy) and busy, f"and on the busy ratio: {list(busy)}")
        by_name = series(text, "gpuspy_kernel_launches_by_name_total")
        check(any(labels(k).get("kernel") == "drv_scale" and v > 0 for k, v in by_name.items()),
              f"per-kernel launches (--metrics-kernels): {by_name}")
        check(any(labels(k).get("kernel") == "drv_scale" and v > 0
                  for k, v in series(text, "gpuspy_kernel_gpu_seconds_total").items()), "per-kernel GPU seconds")
        check(total(text, "gpuspy_recording") == 1, "gpuspy_recording 1 while recording")

        promtool = shutil.which("promtool")
        if promtool:
            r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
            check(r.returncode == 0, f"promtool check metrics: {r.returncode} {r.stdout.strip()} {r.stderr.strip()}")
        else:
            skipped.append("promtool not installed (Debian package prometheus; scripts/deps.sh installs it)")

        # Paused: the launches are counted as not recorded, the recorded counter stands still.
        ctl("stop")
        launch = lambda t: total(t, "gpuspy_calls_not_recorded_total", lambda x: x.get("category") == "launch")
        text = wait_for("paused", lambda t: total(t, "gpuspy_recording") == 0 and launch(t) > 0)
        held = total(text, "gpuspy_kernel_launches_total")
        not_recorded = launch(text)
        text = wait_for("paused calls counted", lambda t: launch(t) > not_recorded + 100)
        # Records already on their way when the word arrived may still land: the counter must not move
        # once the shim's own Tally says it is paused, two scrapes apart.
        text2 = wait_for("still paused", lambda t: launch(t) > launch(text))
        check(total(text2, "gpuspy_kernel_launches_total") == total(text, "gpuspy_kernel_launches_total"),
              f"while paused: recorded launches stand at {total(text2, 'gpuspy_kernel_launches_total'):.0f}"
              f" (at the pause {held:.0f}); not recorded: {not_recorded:.0f} -> {launch(text2):.0f}")
        calls = series(text2, "gpuspy_calls_not_recorded_total")
        check({labels(k).get("category") for k in calls} >= {"launch", "transfer", "sync"},
              f"not-recorded calls by category: {calls}")

        ctl("start")
        base = total(text2, "gpuspy_kernel_launches_total")
        text = wait_for("recording again", lambda t: total(t, "gpuspy_recording") == 1
                        and total(t, "gpuspy_kernel_launches_total") > base)
        check(True, "after ctl start: gpuspy_recording 1 and the launch counter moves again")
    finally:
        server.stdin.close()
        server.wait()
        col.send_signal(signal.SIGINT)
        col.wait()

for s in skipped:
    print("SKIP " + s)
if failures:
    sys.exit(1)
sys.exit(77 if skipped else 0)
