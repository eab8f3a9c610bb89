#!/usr/bin/env python3
"""tests/attach/attach_test.py: gpuspy attach on one long-running test server (server_loop.h's protocol).

--mode window: the server runs a fixed list of commands twice, once alone and once with two attach
  windows (the first ended by Ctrl-C to `gpuspy attach`, the second by `gpuspy attach --detach PID`);
  its output and exit status must be the same both times, and each window's capture must hold exactly
  as many --api calls as the server made in that window, and say it was attached.
--mode late: the same, with the server attached before it initialises CUDA (started with --late):
  `gpuspy attach` must report the driver pointers swapped once the server says "ready".
--mode socket: one window sent to a running `gpuspy collect --socket` instead of a file.
--mode refuse-epoll / refuse-user / refuse-undumpable / refuse-preloaded: the attach must fail with one clear line (exit 1)
  and the server must go on exactly as without it.
The test driver is the servers' parent (Yama's ptrace_scope 1 lets a parent's other children trace
them only through PR_SET_PTRACER, which the servers set)."""
import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

TIMEOUT_S = 120


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Server:
    def __init__(self, argv, env, user=None):
        kw = {}
        if user is not None:
            kw = dict(user=user, group=user, extra_groups=[])
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1, **kw)
        self.lines = []
        self.ask("ping", "pong")  # up and running: its libraries are loaded

    def ask(self, command, expect_prefix):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        ready, _, _ = select.select([self.p.stdout], [], [], TIMEOUT_S)
        if not ready:
            fail(f"server gave no answer to {command!r}")
        line = self.p.stdout.readline().rstrip("\n")
        self.lines.append(line)
        if not line.startswith(expect_prefix):
            fail(f"server answered {command!r} with {line!r}")
        return line

    def finish(self):
        out, _ = self.p.communicate("quit\n", timeout=TIMEOUT_S)
        self.lines += out.splitlines()
        return self.p.returncode


def run_alone(server_argv, env, script):
    s = Server(server_argv, env)
    for cmd, prefix in script:
        s.ask(cmd, prefix)
    rc = s.finish()
    return s.lines, rc


def count_calls(gpuspy, capture, api):
    out = subprocess.run([gpuspy, "dump", capture], capture_output=True, text=True, timeout=TIMEOUT_S)
    if out.returncode != 0:
        fail(f"gpuspy dump {capture}: {out.stderr.strip()}")
    n = 0
    attached = False
    for line in out.stdout.splitlines():
        m = re.search(r" Call #\d+ (\S+)", line)
        if m and (m.group(1) == api or m.group(1).startswith(api + "_pt")):
            n += 1
        if " Notice " in line and "code=2 " in line and "attached" in line:
            attached = True
    return n, attached


class Attach:
    """A running `gpuspy attach PID -o FILE`, read until it says it attached."""

    def __init__(self, args, pid, capture, want_line, socket=None):
        self.args = args
        where = ["--socket", socket] if socket else ["-o", capture]
        self.p = subprocess.Popen([args.gpuspy, "attach", str(pid)] + where, stderr=subprocess.PIPE,
                                  text=True, env=cli_env(args))
        self.err = []
        self.wait_for(want_line)

    def wait_for(self, pattern):
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.p.stderr], [], [], 1.0)
            if not ready:
                if self.p.poll() is not None:
                    break
                continue
            line = self.p.stderr.readline()
            if not line:
                break
            self.err.append(line.rstrip("\n"))
            print("  gpuspy: " + self.err[-1])
            if re.search(pattern, line):
                return line
        fail(f"gpuspy attach never said /{pattern}/; it said: {self.err}")

    def end(self, how):
        if how == "sigint":
            self.p.send_signal(signal.SIGINT)
        rest = self.p.communicate(timeout=TIMEOUT_S)[1]
        self.err += rest.splitlines()
        for line in rest.splitlines():
            print("  gpuspy: " + line)
        if self.p.returncode != 0:
            fail(f"gpuspy attach exited {self.p.returncode}: {self.err}")


def cli_env(args):
    env = dict(os.environ)
    env["GPUSPY_SHIM"] = args.shim
    return env


def check_capture(args, capture, expected):
    if not os.path.exists(capture):
        fail(f"no capture {capture}")
    n, attached = count_calls(args.gpuspy, capture, args.api)
    print(f"  {capture}: {n} {args.api} calls, server made {expected}")
    if n != expected:
        fail(f"{capture} holds {n} {args.api} calls; the server made {expected} in the window")
    if not attached:
        fail(f"{capture} does not say it was attached (Notice code=2, wire::kNoticeAttached)")
    report = subprocess.run([args.gpuspy, "report", capture], capture_output=True, text=True, timeout=TIMEOUT_S)
    if report.returncode != 0 or "attached to a running process" not in report.stdout:
        fail(f"gpuspy report {capture} does not say it was attached: {report.stdout[:2000]} {report.stderr}")
    if not args.server_is_drv:
        check_memory(args, capture, expected)


def check_memory(args, capture, expected):
    """The cudart server allocates and frees a scratch buffer each iteration (its counter at init is never in a
    window: a late attach swaps the driver's pointers only once cudart initialised, after that allocation):
    the window's memory row counts exactly those, says it was attached, and the text says what it cannot know."""
    out = subprocess.run([args.gpuspy, "report", "--format", "json", capture], capture_output=True, text=True, timeout=TIMEOUT_S)
    if out.returncode != 0:
        fail(f"gpuspy report --format json {capture}: {out.stderr.strip()}")
    rows = [m for m in json.loads(out.stdout)["memory"] if m["space"] == "device"]
    allocs, held = expected, 0
    got = rows[0] if len(rows) == 1 else None
    # cudart initialises inside the server's first cudaMalloc (the counter's, 4 bytes, kept to the exit): a
    # late attach's rescan may land between that initialisation and the allocation itself, which the window
    # then holds too (2 runs in 4 on a loaded host). Either way the counts are exact.
    if got and got["allocations"] == expected + 1 and got["in_use_end_bytes"] == 4:
        allocs, held = expected + 1, 4
    if not got or got["allocations"] != allocs or got["releases"] != expected or got["unknown_releases"] != 0 or \
            got["in_use_end_bytes"] != held or not got["attached"]:
        fail(f"{capture}: the memory row counts {got and (got['allocations'], got['releases'], got['unknown_releases'], got['in_use_end_bytes'], got['attached'])}; "
             f"expected {allocs} allocations, {expected} releases, none unknown, {held} bytes at the end, attached")
    text = subprocess.run([args.gpuspy, "report", capture], capture_output=True, text=True, timeout=TIMEOUT_S).stdout
    if "memory allocated before the attach is unknown" not in text:
        fail(f"{capture}: the text report's memory section does not say what the attach cannot know")
    print(f"  {capture}: memory: {allocs} allocations, {expected} releases since the attach, attached")


def totals(line):
    return int(re.search(r"total=(\d+)", line).group(1))


def mode_window(args, env, late):
    # Each window's work is divisible by every --threads the tests use (3, 4).
    script = ([("init", "ready")] if late else []) + [("work 120", "done"), ("work 240", "done"),
                                                      ("work 60", "done"), ("work 36", "done")]
    base_lines, base_rc = run_alone(args.server, env, script)

    s = Server(args.server, env)
    pid = s.p.pid
    cap1, cap2 = os.path.join(args.work, "window1.gspy"), os.path.join(args.work, "window2.gspy")
    if late:
        # Attached before the process initialised CUDA: the rescan finds its pointers after "init" (a
        # -lcuda program's GOT slots are taken at once: the driver is loaded with the program).
        a = Attach(args, pid, cap1, r"attached to process")
        if not args.server_is_drv:
            if "not initialised yet" not in a.err[-1]:
                fail("gpuspy attach did not say CUDA was not initialised yet: " + a.err[-1])
            s.ask("init", "ready")
            a.wait_for(r"driver pointers swapped now")
        else:
            s.ask("init", "ready")
        start = 0
        s.ask("work 120", "done")
    else:
        start = totals(s.ask("work 120", "done"))
        a = Attach(args, pid, cap1, r"attached to process")
    w1 = totals(s.ask("work 240", "done")) - start
    a.end("sigint")
    check_capture(args, cap1, w1)

    # Attach again; this window ends with `gpuspy attach --detach PID` from another gpuspy.
    a2 = Attach(args, pid, cap2, r"attached to process")
    start = totals(s.lines[-1])
    w2 = totals(s.ask("work 60", "done")) - start
    d = subprocess.run([args.gpuspy, "attach", "--detach", str(pid)], capture_output=True, text=True,
                       env=cli_env(args), timeout=TIMEOUT_S)
    print("  gpuspy --detach: " + d.stderr.strip())
    if d.returncode != 0:
        fail(f"gpuspy attach --detach exited {d.returncode}: {d.stderr.strip()}")
    a2.end("wait")
    check_capture(args, cap2, w2)

    s.ask("work 36", "done")  # after the detach: recorded nowhere, the server as before
    rc = s.finish()
    compare_runs(base_lines, base_rc, s.lines, rc)


def mode_socket(args, env):
    """One window sent to a running `gpuspy collect --socket`: the collector's capture holds the window."""
    script = [("work 30", "done"), ("work 90", "done"), ("work 12", "done")]
    base_lines, base_rc = run_alone(args.server, env, script)
    sock = os.path.join(args.work, "collect.sock")
    cap = os.path.join(args.work, "collected.gspy")
    collector = subprocess.Popen([args.gpuspy, "collect", "--socket", sock, "-o", cap], stderr=subprocess.PIPE,
                                 text=True)
    deadline = time.monotonic() + TIMEOUT_S
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.05)
    s = Server(args.server, env)
    start = totals(s.ask("work 30", "done"))
    a = Attach(args, s.p.pid, None, r"attached to process", socket=sock)
    window = totals(s.ask("work 90", "done")) - start
    a.end("sigint")
    s.ask("work 12", "done")
    rc = s.finish()
    collector.send_signal(signal.SIGINT)
    err = collector.communicate(timeout=TIMEOUT_S)[1]
    print("  gpuspy collect: " + err.strip().replace("\n", " | "))
    if collector.returncode != 0:
        fail(f"gpuspy collect exited {collector.returncode}")
    check_capture(args, cap, window)
    compare_runs(base_lines, base_rc, s.lines, rc)


def compare_runs(base_lines, base_rc, lines, rc):
    if lines != base_lines or rc != base_rc:
        fail(f"the server's output or exit status changed: alone {base_lines} rc={base_rc}, attached {lines} rc={rc}")
    print(f"  server output and exit status ({rc}) as without gpuspy")


def mode_refuse(args, env, kind):
    script = [("work 30", "done")] * (1 if kind == "epoll" else 2)
    user = None
    cli_user = None
    if kind in ("user", "undumpable"):
        if os.geteuid() != 0:
            print("SKIP: needs root to run the server or gpuspy as another user")
            sys.exit(0)
        if kind == "user":
            cli_user = 65534  # gpuspy as nobody, the server as root: another user's process
        else:
            user = cli_user = 65534  # both as nobody; the server not dumpable
    if kind == "preloaded":
        # A process started with the preload records already: attach must leave it alone.
        env = dict(env)
        env["LD_PRELOAD"] = args.shim
        env["GPUSPY_OUTPUT"] = os.path.join(args.work, "preloaded.%p.gspy")
    base_lines, base_rc = run_alone(args.server, env, script) if user is None else run_as(args, env, script, user)
    s = Server(args.server, env, user=user)
    if kind != "epoll":
        s.ask("work 30", "done")  # CUDA live (the epoll server stays single-threaded: no CUDA before)
    kw = dict(user=cli_user, group=cli_user, extra_groups=[]) if cli_user is not None else {}
    r = subprocess.run([args.gpuspy, "attach", str(s.p.pid), "-o", os.path.join(args.work, "refused.gspy")],
                       capture_output=True, text=True, env=cli_env(args), timeout=TIMEOUT_S, cwd=args.work, **kw)
    lines = r.stderr.strip().splitlines()
    print("  gpuspy: " + r.stderr.strip())
    want = {"epoll": "no thread of process", "user": "runs as uid", "undumpable": "not dumpable",
            "preloaded": "runs with gpuspy preloaded"}[kind]
    if r.returncode != 1 or len(lines) != 1 or want not in lines[0]:
        fail(f"expected one line with {want!r} and exit 1, got exit {r.returncode}: {lines}")
    if os.path.exists(os.path.join(args.work, "refused.gspy")):
        fail("a refused attach left a capture")
    s.ask("work 30", "done")
    rc = s.finish()
    compare_runs(base_lines, base_rc, s.lines, rc)
    if kind == "preloaded":
        # The preload's own capture is whole: every call of the run, none lost to a detach.
        check_preloaded(args, s.p.pid, 60)


def check_preloaded(args, pid, expected):
    cap = os.path.join(args.work, f"preloaded.{pid}.gspy")
    n, _ = count_calls(args.gpuspy, cap, args.api)
    print(f"  {cap}: {n} {args.api} calls, server made {expected}")
    if n != expected:
        fail(f"the preloaded process's own capture holds {n} {args.api} calls, not {expected}")


def run_as(args, env, script, user):
    s = Server(args.server, env, user=user)
    for cmd, prefix in script:
        s.ask(cmd, prefix)
    rc = s.finish()
    return s.lines, rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuspy", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--ld", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--api", required=True)
    ap.add_argument("server", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    args.server = [a for a in args.server if a != "--"] if args.server[:1] == ["--"] else args.server
    args.gpuspy, args.shim = os.path.abspath(args.gpuspy), os.path.abspath(args.shim)
    args.server[0] = os.path.abspath(args.server[0])
    args.server_is_drv = "drv_server" in os.path.basename(args.server[0])
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    os.chmod(args.work, 0o777)  # the refused cases run gpuspy as another user there
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.ld
    for k in list(env):
        if k.startswith("GPUSPY_") or k == "LD_PRELOAD":
            del env[k]
    if args.mode == "window":
        mode_window(args, env, late=False)
    elif args.mode == "late":
        mode_window(args, env, late=True)
    elif args.mode == "socket":
        mode_socket(args, env)
    elif args.mode.startswith("refuse-"):
        mode_refuse(args, env, args.mode[len("refuse-"):])
    else:
        fail("unknown mode " + args.mode)
    print("PASS")


if __name__ == "__main__":
    main()
