#!/usr/bin/env python3
"""torch_loop.py: a small PyTorch inference loop for scripts/gpu-check.sh.

Each step copies one batch from pageable memory (a plain .cuda(): synchronous) and one from pinned
memory (.cuda(non_blocking=True)), runs a model built in code on both, copies the result back to the
host and calls torch.cuda.synchronize(). --mode bare times the loop; --mode profiler runs the same
under torch.profiler (CPU and CUDA activities, from before the model is built to the end) and counts
the kernels, copies and bytes it saw. Writes a JSON summary to --out."""
import argparse
import json
import os
import tempfile
import time

import torch


def build_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024),
        torch.nn.LayerNorm(1024), torch.nn.Linear(1024, 256),
    ).cuda().eval()


def run(steps, warmup, batch):
    model = build_model()
    pageable = torch.randn(batch, 1024)
    pinned = torch.randn(batch, 1024).pin_memory()
    out = None

    def step():
        x1 = pageable.cuda()
        x2 = pinned.cuda(non_blocking=True)
        with torch.no_grad():
            y = model(x1) + model(x2)
        host = y.cpu()
        torch.cuda.synchronize()
        return host

    for _ in range(warmup):
        out = step()
    t0 = time.perf_counter()
    for _ in range(steps):
        out = step()
    loop_s = time.perf_counter() - t0
    return loop_s, float(out.sum())


def profile(steps, warmup, batch):
    from torch.profiler import ProfilerActivity, profile as tprofile
    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        loop_s, checksum = run(steps, warmup, batch)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    os.unlink(path)
    counts = {"kernels": 0, "memcpy": {}, "memset": 0}
    for ev in trace.get("traceEvents", []):
        cat = ev.get("cat", "")
        if ev.get("ph") != "X":
            continue
        if cat == "kernel":
            counts["kernels"] += 1
        elif cat == "gpu_memcpy":
            name = ev.get("name", "")
            d = "HtoD" if "HtoD" in name else "DtoH" if "DtoH" in name else "DtoD" if "DtoD" in name else name
            c = counts["memcpy"].setdefault(d, {"count": 0, "bytes": 0})
            c["count"] += 1
            c["bytes"] += int(ev.get("args", {}).get("bytes", 0))
        elif cat == "gpu_memset":
            counts["memset"] += 1
    return loop_s, checksum, counts


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["bare", "profiler"], default="bare")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    result = {"mode": a.mode, "steps": a.steps, "warmup": a.warmup, "batch": a.batch,
              "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    if a.mode == "bare":
        result["loop_s"], result["checksum"] = run(a.steps, a.warmup, a.batch)
    else:
        result["loop_s"], result["checksum"], result["counts"] = profile(a.steps, a.warmup, a.batch)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"torch_loop {a.mode}: {a.steps} steps in {result['loop_s']:.3f} s")


if __name__ == "__main__":
    main()
