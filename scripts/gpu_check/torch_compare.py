#!/usr/bin/env python3
"""torch_compare.py: gpuspy's report of the PyTorch loop against torch.profiler's count of the same
loop, and each profiler's wall-time overhead, for scripts/gpu-check.sh.

Usage: torch_compare.py DIR   (DIR holds bare.json, bare2.json, gpuspy.json, profiler.json, report.json)
Compared exactly: kernels launched, HtoD and DtoH copies (count and bytes). The overheads are the
loop's wall time under each profiler over the mean of the two bare runs (one before, one after)."""
import json
import os
import sys


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def main():
    d = sys.argv[1]
    bare = [load(d, "bare.json"), load(d, "bare2.json")]
    gs, prof, rep = load(d, "gpuspy.json"), load(d, "profiler.json"), load(d, "report.json")
    counts = prof["counts"]
    g_kernels = sum(k["count"] for k in rep.get("kernels", []))
    g_copies = {}
    for t in rep.get("transfers", []):
        c = g_copies.setdefault(t["direction"], {"count": 0, "bytes": 0})
        c["count"] += t["count"]
        c["bytes"] += t["bytes"]
    bad = 0

    def check(what, g, p):
        nonlocal bad
        ok = g == p
        bad += 0 if ok else 1
        print(f'{"ok  " if ok else "FAIL"} {what}: gpuspy {g}, torch.profiler {p}')

    check("kernels", g_kernels, counts["kernels"])
    for direction in ("HtoD", "DtoH"):
        g = g_copies.get(direction, {"count": 0, "bytes": 0})
        p = counts["memcpy"].get(direction, {"count": 0, "bytes": 0})
        check(f"{direction} copies", g["count"], p["count"])
        check(f"{direction} bytes", g["bytes"], p["bytes"])
    check("memsets", g_copies.get("Memset", {"count": 0})["count"], counts["memset"])
    for r in (gs, prof, bare[1]):
        if abs(r["checksum"] - bare[0]["checksum"]) > 1e-3 * max(1.0, abs(bare[0]["checksum"])):
            print(f'FAIL the {r["mode"]} run computed {r["checksum"]}, the bare run {bare[0]["checksum"]}')
            bad += 1
    base = (bare[0]["loop_s"] + bare[1]["loop_s"]) / 2
    steps = gs["steps"]
    print(f"loop of {steps} steps: bare {bare[0]['loop_s']:.3f} s / {bare[1]['loop_s']:.3f} s, "
          f"gpuspy {gs['loop_s']:.3f} s, torch.profiler {prof['loop_s']:.3f} s")
    findings = ", ".join(f["rule"] for f in rep.get("findings", []))
    print(f"gpuspy findings: {findings}")
    print(f"kernels {g_kernels}, overhead vs bare: gpuspy {100 * (gs['loop_s'] / base - 1):+.1f}%, "
          f"torch.profiler {100 * (prof['loop_s'] / base - 1):+.1f}% ({1e6 * base / steps:.0f} us/step bare)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
