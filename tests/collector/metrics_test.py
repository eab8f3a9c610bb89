#!/usr/bin/env python3
"""tests/collector/metrics_test.py: `gpuspy collect --metrics HOST:PORT`, scraped three ways.

A stand-in process (ring_client --hold) makes 500 kernel launches, 40 synchronous pageable 1 MiB
host-to-device copies and 30 stream synchronizes, and stays connected. Then:
- /metrics fetched with curl holds gpuspy_kernel_launches_total 500 for its pid, the transfer bytes
  (40 MiB, direction HtoD, host_memory pageable, mode sync) and seconds, the stream sync blocked
  seconds, the busy ratio, dropped records, the shim's overhead from its running Tally (19.7 ms), the
  device's DCGM exporter labels (UUID, gpu, pci_bus_id, Hostname); no kernel name appears
  (per-kernel series are opt-in: tests/collector/metrics_sim_test.py);
- `promtool check metrics` accepts it (Debian's prometheus package);
- a real Prometheus, started here on loopback and scraping every second, returns the launch counter
  from its query API (skipped, with a message, only when the prometheus binary is absent: exit 77);
- a second collector on the same port: one line on stderr, exit status 1;
- the plugin libgpuspy_metrics.so (prometheus-cpp, loaded only for --metrics) missing or not loadable
  (GPUSPY_METRICS_PLUGIN pointing at nothing, or at a file that is no library): one line, exit status 1;
- once the process has ended, its series leave /metrics (after two scrapes of its last figures).

usage: metrics_test.py GPUSPY RING_CLIENT
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from metrics_common import curl, free_port, series, start_collector

cli, client = sys.argv[1], sys.argv[2]
failures = []
skipped = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


with tempfile.TemporaryDirectory() as d:
    port = free_port()
    col, sock, err = start_collector(cli, d, port)
    app = subprocess.Popen([client, sock, "--hold", "secret_kernel_name=500@0/1000", "copy=40@1/1000", "sync=30@2/1000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    app.stdout.readline()
    url = f"http://127.0.0.1:{port}/metrics"
    # The collector analyzes once a second; no time limit here beyond the test's own (a loaded
    # machine only makes this slower).
    while True:
        assert col.poll() is None, open(err.name).read()
        r = curl(url)
        launches = series(r.stdout, "gpuspy_kernel_launches_total")
        # The stream's last records are the 30 syncs: once all are counted, so is everything before
        # them (each second's records are analyzed in arrival order).
        syncs = series(r.stdout, "gpuspy_syncs_total")
        if any(v == 500 for v in launches.values()) and any('sync_kind="stream"' in k and v == 30 for k, v in syncs.items()):
            break
        time.sleep(0.2)
    text = r.stdout
    open(os.path.join(d, "metrics.txt"), "w").write(text)
    check(list(launches.values()) == [500] and 'pid="5151"' in list(launches)[0] and 'command="ring_server"' in list(launches)[0]
          and 'device="0"' in list(launches)[0], f"launch counter: {launches}")
    tb = series(text, "gpuspy_transfer_bytes_total")
    check(len(tb) == 1 and list(tb.values())[0] == 40 * (1 << 20)
          and all(x in list(tb)[0] for x in ('direction="HtoD"', 'host_memory="pageable"', 'mode="sync"')),
          f"transfer bytes: {tb}")
    ts = series(text, "gpuspy_transfer_host_seconds_total")
    check(len(ts) == 1 and abs(list(ts.values())[0] - 40 * 100e-6) < 1e-9, f"transfer host seconds: {ts}")
    sb = series(text, "gpuspy_sync_blocked_seconds_total")
    check(any('sync_kind="stream"' in k and abs(v - 30 * 50e-6) < 1e-9 for k, v in sb.items()), f"sync blocked seconds: {sb}")
    for name in ("gpuspy_gpu_busy_ratio", "gpuspy_dropped_records_total"):
        check(bool(series(text, name)), f"{name} present")
    # The stand-in's running totals (a Tally) and device identity (a DeviceInfo), as the shim sends them.
    oh = series(text, "gpuspy_shim_overhead_seconds_total")
    check(len(oh) == 1 and abs(list(oh.values())[0] - 0.0197) < 1e-9, f"the shim's own time from its running Tally: {oh}")
    check(list(series(text, "gpuspy_recording").values()) == [1], "gpuspy_recording 1 (no window asked for)")
    check('UUID="GPU-10111213-1415-1617-1819-1a1b1c1d1e1f"' in list(launches)[0] and 'gpu="0"' in list(launches)[0]
          and 'pci_bus_id="00000000:41:00.0"' in list(launches)[0]
          and f'Hostname="{socket.gethostname()}"' in list(launches)[0], f"DCGM exporter's labels: {list(launches)[0]}")
    check(not series(text, "gpuspy_kernel_launches_by_name_total"), "no per-kernel series unless asked for")
    check("secret_kernel_name" not in text, "no kernel names in the labels")

    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check metrics: {r.returncode} {r.stdout.strip()} {r.stderr.strip()}")
    else:
        skipped.append("promtool not installed (Debian package prometheus; scripts/deps.sh installs it)")

    prometheus = shutil.which("prometheus")
    if prometheus:
        pport = free_port()
        cfg = os.path.join(d, "prometheus.yml")
        open(cfg, "w").write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpuspy\n"
                             f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        plog = open(os.path.join(d, "prometheus.log"), "w")
        prom = subprocess.Popen([prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={d}/tsdb",
                                 f"--web.listen-address=127.0.0.1:{pport}"], stdout=plog, stderr=plog)
        value = None
        try:
            q = f"http://127.0.0.1:{pport}/api/v1/query?query=gpuspy_kernel_launches_total"
            while value is None:
                assert prom.poll() is None, open(plog.name).read()[-2000:]
                try:
                    res = json.load(urllib.request.urlopen(q, timeout=10))
                    if res["status"] == "success" and res["data"]["result"]:
                        value = res["data"]["result"][0]
                except OSError:
                    pass
                time.sleep(0.5)
        finally:
            prom.terminate()
            prom.wait()
        check(value["value"][1] == "500" and value["metric"].get("pid") == "5151" and value["metric"].get("job") == "gpuspy",
              f"Prometheus's query API: {value}")
    else:
        skipped.append("prometheus not installed (Debian package prometheus; scripts/deps.sh installs it)")

    # The port is taken now: a second collector says so in one line.
    r = subprocess.run([cli, "collect", "--socket", os.path.join(d, "sock2"), "--metrics", f"127.0.0.1:{port}",
                        "-o", os.path.join(d, "c2.gspy")], capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and f"cannot serve metrics on 127.0.0.1:{port}" in r.stderr
          and not os.path.exists(os.path.join(d, "sock2")), f"a port in use: {r.returncode} {r.stderr.strip()}")

    # Without a working plugin: one line, and the collector does not start.
    junk = os.path.join(d, "libjunk.so")
    open(junk, "w").write("not a library\n")
    for plugin, says in ((os.path.join(d, "absent.so"), "does not point at the metrics plugin"),
                         (junk, "cannot load the metrics plugin")):
        r = subprocess.run([cli, "collect", "--socket", os.path.join(d, "sock3"), "--metrics", str(free_port()),
                            "-o", os.path.join(d, "c3.gspy")], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, GPUSPY_METRICS_PLUGIN=plugin))
        check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and says in r.stderr
              and not os.path.exists(os.path.join(d, "sock3")), f"plugin {os.path.basename(plugin)}: {r.returncode} {r.stderr.strip()}")

    # The process ends: its series leave /metrics after two more scrapes (a server whose workers come
    # and go must not pile up series), the collector's own stay.
    app.stdin.close()
    app.wait()
    scrapes = 0
    while True:
        text = curl(url).stdout
        scrapes += 1
        if 'pid="5151"' not in text:
            break
        time.sleep(0.2)
    check("gpuspy_connected_processes 0" in text, f"the ended process's series are gone after {scrapes} scrapes")
    col.send_signal(signal.SIGINT)
    check(col.wait() == 0, "the collector finishes")

for s in skipped:
    print("SKIP " + s)
if failures:
    sys.exit(1)
sys.exit(77 if skipped else 0)
