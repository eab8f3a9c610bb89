#!/usr/bin/env python3
"""tests/package/run_from_tarball.py: the release tarball works where nothing of gpuspy is installed.

Unpacks the tarball into an empty directory, copies one tests/apps program out of the build tree, and
runs `gpuspy record --sim`, `report --format json` and `view` from the unpacked folder with a clean
environment (PATH=/usr/bin:/bin and a fresh HOME only). The report must show the facts the program's
source implies: every constant is read from the .cu file, so editing the program cannot leave a stale
number here. The shim must load the libunwind.so.8 that ships next to it (checked with LD_DEBUG), and
the call sites must be symbolized to the program's own source (the statically linked libdw at work).
With --gpu-check-sim OUT, the real-GPU check that travels in the tarball then runs from the unpacked
folder on the simulated driver (`scripts/gpu-check.sh --sim --out OUT`, same clean environment; it finds
nvcc at /usr/local/cuda/bin) and must pass: the kit a GPU machine gets is proven whole (sources,
settings, expectations and script).

With --metrics RING_CLIENT, `gpuspy collect --metrics 127.0.0.1:PORT` runs from the unpacked folder (same
clean environment: no LD_LIBRARY_PATH) while RING_CLIENT (tests/collector/ring_client, a stand-in for a
traced process) makes a known number of launches, and /metrics, scraped with curl, must count them;
LD_DEBUG must show the plugin and every library it needs loaded from the kit's lib/gpuspy/, and none of
them loaded by the commands without --metrics. With the plugin removed, `collect --metrics` says so in
one line and exits non-zero.

Usage: run_from_tarball.py TARBALL APP_BINARY APP_SOURCE [--gpu-check-sim OUT] [--metrics RING_CLIENT]
  APP_BINARY  e.g. build/bin/apps/pageable_sync_copies.static (static cudart: needs only libcuda)
  APP_SOURCE  its source, tests/apps/pageable_sync_copies.cu
  OUT         gpu-check's results folder (its summary.md and every run's files)
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def fail(message):
    print(f"run_from_tarball: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def source_constants(path):
    """The `constexpr int|size_t kName = expr;` lines of a tests/apps program, evaluated in order."""
    values = {}
    pattern = re.compile(r"^\s*constexpr\s+(?:int|size_t|unsigned|long)\s+(k\w+)\s*=\s*([^;]+);", re.M)
    with open(path) as f:
        text = f.read()
    for name, expr in pattern.findall(text):
        expr = re.sub(r"sizeof\((float|int)\)", "4", expr)
        expr = re.sub(r"sizeof\((double|size_t)\)", "8", expr)
        if not re.fullmatch(r"[\w\s()+\-*/<>]+", expr):
            continue  # not a plain arithmetic expression: not a constant this test needs
        try:
            values[name] = int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(values)))
        except (NameError, SyntaxError):
            continue
    return values


def run(argv, cwd, env, what):
    result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=300)
    if result.returncode != 0:
        fail(f"{what}: exit status {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")
    return result.stdout


def run_gpu_check(kit, out, env):
    """scripts/gpu-check.sh --sim from the unpacked kit; its log and table go to this test's output."""
    script = os.path.join(kit, "scripts", "gpu-check.sh")
    if not os.access(script, os.X_OK):
        fail("the tarball carries no executable scripts/gpu-check.sh")
    shutil.rmtree(out, ignore_errors=True)
    sys.stdout.flush()
    result = subprocess.run([script, "--sim", "--out", out], cwd=kit, env=env, timeout=1800)
    if result.returncode != 0:
        fail(f"scripts/gpu-check.sh --sim from the tarball: exit status {result.returncode} "
             f"(its table: {os.path.join(out, 'summary.md')}, every run under {os.path.join(out, 'runs')})")


# The plugin and what it needs, as scripts/package.sh bundles them.
METRICS_LIBS = ("libgpuspy_metrics.so", "libprometheus-cpp-core.so.1.0", "libprometheus-cpp-pull.so.1.0",
                "libcivetweb.so.1", "libcivetweb-cpp.so.1", "libz.so.1")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def loaded_from(log_dir, prefix):
    """{library file name: [paths]} of every library the LD_DEBUG logs named PREFIX* say was initialized."""
    out = {}
    for n in os.listdir(log_dir):
        if n.startswith(prefix):
            for path in re.findall(r"calling init: (\S+)", open(os.path.join(log_dir, n), errors="replace").read()):
                out.setdefault(os.path.basename(path), []).append(path)
    return out


def run_metrics(kit, ring_client, tmp, env):
    """`collect --metrics` from the kit, scraped with curl; then the same without the plugin."""
    gpuspy = os.path.join(kit, "bin", "gpuspy")
    work = os.path.join(tmp, "metrics")
    os.mkdir(work)
    sock = os.path.join(work, "sock")
    port = free_port()
    launches = 321
    err = open(os.path.join(work, "collect.err"), "w")
    collect_env = dict(env, LD_DEBUG="libs", LD_DEBUG_OUTPUT=os.path.join(work, "ld"))
    col = subprocess.Popen([gpuspy, "collect", "--socket", sock, "--metrics", f"127.0.0.1:{port}", "-o", "c.gspy"],
                           cwd=work, env=collect_env, stdout=subprocess.DEVNULL, stderr=err)
    app = None
    try:
        while True:  # the socket file exists from bind(); wait for listen()
            if col.poll() is not None:
                fail(f"gpuspy collect --metrics from the tarball ended ({col.returncode}): {open(err.name).read()}")
            try:
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect(sock)
                c.close()
                break
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.05)
        app = subprocess.Popen([ring_client, sock, "--hold", f"tarball_kernel={launches}@0/1000"], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        app.stdout.readline()
        url = f"http://127.0.0.1:{port}/metrics"
        counted = None
        # The collector analyzes once a second; a generous bound only so that a broken kit cannot hang CI.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            r = subprocess.run(["curl", "-sS", "--max-time", "30", url], capture_output=True, text=True)
            counted = re.findall(r"^gpuspy_kernel_launches_total\{[^}]*\} (\S+)$", r.stdout, re.M)
            if counted == [str(launches)]:
                break
            time.sleep(0.2)
        if counted != [str(launches)]:
            fail(f"/metrics from the tarball's gpuspy counts launches {counted}, the client made {launches}:\n"
                 f"{r.stdout[-2000:]}{r.stderr[-1000:]}")
    finally:
        if app:
            app.stdin.close()
            app.wait()
        col.send_signal(signal.SIGINT)
        rc = col.wait()
    if rc != 0:
        fail(f"gpuspy collect --metrics exit status {rc}: {open(err.name).read()}")
    libs = loaded_from(work, "ld.")
    where = os.path.realpath(os.path.join(kit, "lib", "gpuspy"))
    for lib in METRICS_LIBS:
        paths = libs.get(lib, [])
        if not paths:
            fail(f"collect --metrics never loaded {lib} (LD_DEBUG shows no init of it)")
        if any(os.path.dirname(os.path.realpath(p)) != where for p in paths):
            fail(f"collect --metrics loaded {lib} from {sorted(set(paths))}, not from the tarball's {where}")

    # Without the plugin: one line, a non-zero exit, no socket.
    plugin = os.path.join(kit, "lib", "gpuspy", "libgpuspy_metrics.so")
    os.rename(plugin, plugin + ".away")
    try:
        r = subprocess.run([gpuspy, "collect", "--socket", sock + "2", "--metrics", str(free_port()), "-o", "d.gspy"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
    finally:
        os.rename(plugin + ".away", plugin)
    if r.returncode == 0 or len(r.stderr.splitlines()) != 1 or "libgpuspy_metrics.so" not in r.stderr \
            or os.path.exists(sock + "2"):
        fail(f"collect --metrics without the plugin: exit status {r.returncode}, stderr {r.stderr!r}")
    return launches


def main():
    args = sys.argv[1:]
    gpu_check_out = metrics_client = None
    for flag in ("--gpu-check-sim", "--metrics"):
        if flag in args[3:]:
            i = args.index(flag, 3)
            if i + 1 >= len(args):
                print(__doc__, file=sys.stderr)
                return 2
            value = os.path.abspath(args[i + 1])
            if flag == "--metrics":
                metrics_client = value
            else:
                gpu_check_out = value
            del args[i:i + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tarball, app_binary, app_source = (os.path.abspath(p) for p in args)
    consts = source_constants(app_source)
    for needed in ("kIters", "kBytes"):
        if needed not in consts:
            fail(f"{app_source} defines no {needed}: this test expects the pageable_sync_copies pattern")
    iters, nbytes = consts["kIters"], consts["kBytes"]

    with tempfile.TemporaryDirectory(prefix="gpuspy-tarball-") as tmp:
        kit_parent = os.path.join(tmp, "kit")
        work = os.path.join(tmp, "work")
        os.mkdir(kit_parent)
        os.mkdir(work)
        subprocess.run(["tar", "-xzf", tarball, "-C", kit_parent], check=True)
        tops = os.listdir(kit_parent)
        if len(tops) != 1:
            fail(f"the tarball should hold one top-level folder, holds {tops}")
        kit = os.path.join(kit_parent, tops[0])
        gpuspy = os.path.join(kit, "bin", "gpuspy")
        app = os.path.join(work, os.path.basename(app_binary))
        shutil.copy2(app_binary, app)

        env = {"PATH": "/usr/bin:/bin", "HOME": tmp}
        # LD_DEBUG reaches the app through `gpuspy record` (the child inherits the environment): its
        # log says which file each library was loaded from.
        ld_log = os.path.join(tmp, "ld")
        record_env = dict(env, LD_DEBUG="libs", LD_DEBUG_OUTPUT=ld_log)
        run([gpuspy, "record", "--sim", "-o", "x.gspy", "--", app], work, record_env, "gpuspy record --sim")
        report = json.loads(run([gpuspy, "report", "x.gspy", "--format", "json"], work, env, "gpuspy report"))
        run([gpuspy, "view", "x.gspy", "-o", "page.html"], work, env, "gpuspy view")

        def transfers(direction):
            return [t for t in report["transfers"]
                    if t["direction"] == direction and t["host_memory"] == "pageable" and t["mode"] == "sync"]

        for direction in ("HtoD", "DtoH"):
            rows = transfers(direction)
            count = sum(t["count"] for t in rows)
            total = sum(t["bytes"] for t in rows)
            if count != iters or total != iters * nbytes:
                fail(f"{direction} pageable sync: {count} copies, {total} bytes; the source implies "
                     f"kIters={iters} copies of kBytes={nbytes}")
        kernels = sum(k["count"] for k in report["kernels"] if "touch" in k["name"])
        if kernels != iters:
            fail(f"touch kernels: {kernels}, the source implies kIters={iters}")

        source_name = os.path.basename(app_source)
        sites = [f for c in report["callsites"] for f in c["frames"] if f.get("file", "").endswith(source_name)]
        if not sites:
            fail(f"no call site is symbolized to {source_name}: stacks or symbolization do not work from the tarball")

        bundled = os.path.join(kit, "lib", "gpuspy", "libunwind.so.8")
        logs = "".join(open(os.path.join(tmp, n), errors="replace").read()
                       for n in os.listdir(tmp) if n.startswith("ld."))
        loaded = re.findall(r"calling init: (\S*libunwind\.so\.8)", logs)
        if not loaded:
            fail("the app never loaded libunwind.so.8 (LD_DEBUG shows no init of it)")
        if any(os.path.realpath(p) != os.path.realpath(bundled) for p in loaded):
            fail(f"libunwind.so.8 was loaded from {sorted(set(loaded))}, not from the tarball's {bundled}")
        plugin_loaded = sorted(set(loaded_from(tmp, "ld.")) & set(METRICS_LIBS))
        if plugin_loaded:
            fail(f"gpuspy record (no --metrics) loaded {plugin_loaded}: only collect --metrics may")

        with open(os.path.join(work, "page.html"), errors="replace") as f:
            page = f.read()
        if "<html" not in page.lower() or "touch" not in page:
            fail("gpuspy view wrote no page that names the app's kernel")

        metrics_launches = run_metrics(kit, metrics_client, tmp, env) if metrics_client else None

        if gpu_check_out:
            run_gpu_check(kit, gpu_check_out, env)

    print(f"run_from_tarball: ok ({iters} HtoD + {iters} DtoH pageable sync copies of {nbytes} bytes, "
          f"{kernels} kernels, {len(sites)} frames in {source_name}, libunwind from the tarball"
          f"{f', /metrics counted {metrics_launches} launches with the bundled plugin' if metrics_client else ''}"
          f"{', gpu-check --sim passed' if gpu_check_out else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
