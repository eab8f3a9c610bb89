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

Usage: run_from_tarball.py TARBALL APP_BINARY APP_SOURCE [--gpu-check-sim OUT]
  APP_BINARY  e.g. build/bin/apps/pageable_sync_copies.static (static cudart: needs only libcuda)
  APP_SOURCE  its source, tests/apps/pageable_sync_copies.cu
  OUT         gpu-check's results folder (its summary.md and every run's files)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


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


def main():
    args = sys.argv[1:]
    gpu_check_out = None
    if len(args) == 5 and args[3] == "--gpu-check-sim":
        gpu_check_out = os.path.abspath(args[4])
        args = args[:3]
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

        with open(os.path.join(work, "page.html"), errors="replace") as f:
            page = f.read()
        if "<html" not in page.lower() or "touch" not in page:
            fail("gpuspy view wrote no page that names the app's kernel")

        if gpu_check_out:
            run_gpu_check(kit, gpu_check_out, env)

    print(f"run_from_tarball: ok ({iters} HtoD + {iters} DtoH pageable sync copies of {nbytes} bytes, "
          f"{kernels} kernels, {len(sites)} frames in {source_name}, libunwind from the tarball"
          f"{', gpu-check --sim passed' if gpu_check_out else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
