#!/usr/bin/env python3
"""tests/collector/hangup_test.py: `gpuspy record` and `gpuspy collect` on a pseudo-terminal that hangs
up (an ssh session that went away: the kernel sends SIGHUP to the session and its foreground group).
Each case runs the command without gpuspy first, the same way: the exit status must be the same, and
gpuspy must have finished its capture (End chunk: `gpuspy report` reads it with status 0) holding every
process. Also: signals ignored by record's parent (nohup, a background job) stay ignored in the command, and
record's output going to a pipe nobody reads any more does not kill it.
usage: hangup_test.py GPUSPY FAKE_SHIM"""
import os
import pty
import signal
import subprocess
import sys
import tempfile
import time

cli, shim = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
env = dict(os.environ, GPUSPY_SHIM=shim)
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAIL: " + msg)


def on_pty_hangup(argv, ready=b"started", after_hangup=None):
    """Runs argv as the session leader of a new pseudo-terminal, waits for `ready` on it, hangs the
    terminal up (closes the master side) and returns the exit status as a shell shows it."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    seen = b""
    deadline = time.time() + 30
    while ready not in seen and time.time() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    if ready not in seen:
        fail("%s never printed %r: %r" % (argv, ready, seen))
    os.close(master)
    if after_hangup:
        after_hangup()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def finished(capture, processes):
    """The capture has its End chunk and holds `processes` processes (a list: any of them)."""
    r = subprocess.run([cli, "dump", capture], capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s is not a finished capture (dump: %d): %s" % (capture, r.returncode, r.stderr.strip()))
        return
    summary = [line for line in r.stdout.splitlines() if line.startswith("# ")]
    if not any((" %d processes" % n) in line for line in summary for n in processes):
        fail("%s: expected %d processes: %s" % (capture, processes, summary))


# 1. The command ignores the hang-up and ends by itself later: record waits for it, keeps its status.
cmd = ["/bin/sh", "-c", 'trap "" HUP; echo started; sleep 1; echo late > "$0"; exit 5']
base = on_pty_hangup(cmd + [work + "/base1"])
rec = on_pty_hangup([cli, "record", "-o", work + "/r1.gspy", "--"] + cmd + [work + "/rec1"])
if base != 5 or rec != base:
    fail("command that ignores SIGHUP: status %d without gpuspy, %d with record" % (base, rec))
if not os.path.exists(work + "/rec1"):
    fail("under record, the command did not finish after the hang-up")
finished(work + "/r1.gspy", [2])  # sh and sleep

# 2. The command dies of the hang-up: record's status is the command's (129), its capture finished.
cmd = ["/bin/sh", "-c", "echo started; exec sleep 20"]
base = on_pty_hangup(cmd)
rec = on_pty_hangup([cli, "record", "-o", work + "/r2.gspy", "--"] + cmd)
if base != 128 + signal.SIGHUP or rec != base:
    fail("command killed by SIGHUP: status %d without gpuspy, %d with record" % (base, rec))
finished(work + "/r2.gspy", [1, 2])  # sh, and sleep unless the hang-up came first


# 3. collect goes on collecting after the hang-up, and finishes on SIGTERM.
sock = work + "/c.sock"


def collect_case():
    pid, master = pty.fork()
    if pid == 0:
        os.execvpe(cli, [cli, "collect", "--socket", sock, "-o", work + "/c.gspy"], env)
    deadline = time.time() + 30
    while not os.path.exists(sock) and time.time() < deadline:
        time.sleep(0.05)
    os.close(master)  # hang-up
    time.sleep(0.5)
    subprocess.run(["/bin/true"], env=dict(env, LD_PRELOAD=shim, GPUSPY_SOCKET=sock))
    time.sleep(0.5)
    alive = os.waitpid(pid, os.WNOHANG)[0] == 0
    if not alive:
        fail("collect died of the hang-up")
        return
    os.kill(pid, signal.SIGTERM)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail("collect after a hang-up and SIGTERM: status %r" % status)
    finished(work + "/c.gspy", [1])


collect_case()

# 4. Dispositions: what record's parent ignored stays ignored in the command, and nothing else is.
def sigign(argv, ignore):
    def pre():
        for s in ignore:
            signal.signal(s, signal.SIG_IGN)
        for s in (signal.SIGPIPE, signal.SIGXFSZ):  # python ignores these itself; a shell does not
            if s not in ignore:
                signal.signal(s, signal.SIG_DFL)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, preexec_fn=pre)
    return [l for l in r.stdout.splitlines() if l.startswith(("SigIgn", "SigBlk"))]

probe = ["/bin/grep", "^Sig\\(Ign\\|Blk\\)", "/proc/self/status"]
for ignore in ([], [signal.SIGINT, signal.SIGTERM], [signal.SIGHUP], [signal.SIGPIPE]):
    base = sigign(probe, ignore)
    rec = sigign([cli, "record", "-f", "-o", work + "/d.gspy", "--"] + probe, ignore)
    if base != rec or not base:
        fail("parent ignoring %s: the command sees %s without gpuspy, %s under record" % (ignore, base, rec))

# 5. The reader of record's output is gone (ssh without a terminal: its pipes closed): record must not
# die of SIGPIPE or of a failed write; the status is the command's and the capture is finished.
r, w = os.pipe()
os.close(r)
p = subprocess.Popen([cli, "record", "-f", "-o", work + "/p.gspy", "--", "/bin/sh", "-c", "sleep 0.3; exit 3"],
                     env=env, stdout=w, stderr=w, preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_DFL))
os.close(w)
if p.wait() != 3:
    fail("record writing to a pipe nobody reads: status %d, the command's was 3" % p.returncode)
finished(work + "/p.gspy", [2])

print("FAILED" if failed else "ok")
sys.exit(1 if failed else 0)
