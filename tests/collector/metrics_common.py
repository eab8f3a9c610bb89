"""tests/collector/metrics_common.py: what the `collect --metrics` tests share (metrics_test.py with a
stand-in process, metrics_sim_test.py with the real shim): a free port, a collector started with
--metrics and waited for, one scrape, and a metric's series read from the Prometheus text."""
import os
import re
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_collector(cli, d, port, *more):
    """`gpuspy collect --socket D/sock --metrics PORT MORE...`, once it listens: (process, socket, stderr file)."""
    sock = os.path.join(d, "sock")
    err = open(os.path.join(d, "collect.err"), "w")
    col = subprocess.Popen([cli, "collect", "--socket", sock, "--metrics", str(port), *more, "-o", os.path.join(d, "c.gspy")],
                           stderr=err, stdout=subprocess.DEVNULL)
    while True:  # the socket file exists from bind(); wait for listen()
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(sock)
            c.close()
            return col, sock, err
        except (FileNotFoundError, ConnectionRefusedError):
            assert col.poll() is None, open(err.name).read()
            time.sleep(0.05)


def curl(url):
    return subprocess.run(["curl", "-sS", "--max-time", "30", url], capture_output=True, text=True)


def series(text, name):
    """{labels-string: value} of one metric."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^" + name + r"\{(.*)\} (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out
