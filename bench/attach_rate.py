#!/usr/bin/env python3
"""bench/attach_rate.py: what `gpuspy attach` costs a running server, as ratios taken in one run.

One long-running test server of tests/attach (its `work N` runs N iterations and answers when done)
is timed in rounds: before any attach, while attached and recording, and after the detach. Each round
times `work N` REPEAT times; the medians are compared with the before-round of the same cycle (the
machine's drift cancels). Issue 20 wants the server "as it found it": the after/before ratio is ~1;
while attached the server pays gpuspy's recording cost (the during/before ratio).

    bench/attach_rate.py --gpuspy build/bin/gpuspy --shim build/lib/libgpuspy.so \
        --ld build/lib/simcuda:/usr/local/cuda/lib64 -- build/bin/attach/cudart_server.static
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "attach"))
import attach_test  # noqa: E402  (its Server and Attach drive the server and gpuspy)


def timed_work(server, n, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        server.ask(f"work {n}", "done")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuspy", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--ld", required=True)
    ap.add_argument("--work", type=int, default=20000, help="iterations a timed request runs")
    ap.add_argument("--repeat", type=int, default=5, help="timed requests a round")
    ap.add_argument("--cycles", type=int, default=3, help="before/during/after cycles")
    ap.add_argument("server", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    server_argv = [a for a in args.server if a != "--"]
    args.gpuspy, args.shim = os.path.abspath(args.gpuspy), os.path.abspath(args.shim)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.ld
    env.pop("LD_PRELOAD", None)
    s = attach_test.Server([os.path.abspath(server_argv[0])] + server_argv[1:], env)
    timed_work(s, args.work, 1)  # warm: CUDA initialised, caches filled
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for cycle in range(args.cycles):
            before = timed_work(s, args.work, args.repeat)
            cap = os.path.join(tmp, f"cycle{cycle}.gspy")
            a = attach_test.Attach(args, s.p.pid, cap, r"attached to process")
            during = timed_work(s, args.work, args.repeat)
            a.end("sigint")
            after = timed_work(s, args.work, args.repeat)
            rows.append((before, during, after))
    s.finish()
    print(f"server: {' '.join(server_argv)}; work {args.work} iterations a request, median of {args.repeat}")
    print("| cycle | before (ms) | attached, recording (ms) | after detach (ms) | during/before | after/before |")
    print("|---|---|---|---|---|---|")
    for i, (b, d, a) in enumerate(rows):
        print(f"| {i + 1} | {b * 1e3:.1f} | {d * 1e3:.1f} | {a * 1e3:.1f} | {d / b:.3f} | {a / b:.3f} |")
    print(f"median after/before {statistics.median(a / b for b, _, a in rows):.3f}, "
          f"during/before {statistics.median(d / b for b, d, _ in rows):.3f}")


if __name__ == "__main__":
    main()
