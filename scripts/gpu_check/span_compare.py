#!/usr/bin/env python3
"""span_compare.py: gpuspy's median GPU time per span_probe kernel against the kernel's duration on the
GPU, for scripts/gpu-check.sh.

Usage: span_compare.py PROBE.jsonl REPORT.json
The reference for each kernel is event_busy_ns: the span between CUDA events around the same kernel
queued back-to-back behind others (events then bracket the kernel alone). gpuspy's median for the
kernel launched on an idle stream (spin<NS, 0>) and queued (spin<NS, 1>) must each be within
max(1 us, 10%) of it. inside_* (the kernel's own %globaltimer reading) and event_idle_ns (events
around a launch on an idle stream, which include the launch's submission) are printed for reference."""
import json
import re
import sys


def main():
    probes = {}
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                p = json.loads(line)
                probes[p["spin_ns"]] = p
    with open(sys.argv[2]) as f:
        report = json.load(f)
    got = {}
    for k in report.get("kernels", []):
        m = re.search(r"spin<(\d+), *(\d)>", k["name"])
        if m:
            got[(int(m.group(1)), int(m.group(2)))] = k
    if not probes:
        print("FAIL span_probe printed nothing")
        return 1
    bad = 0
    worst = 0.0
    print(f'{"kernel":>14} {"inside":>9} {"ev idle":>9} {"ev busy":>9} {"gpuspy":>9} {"timed":>6} {"launch":>8} {"evrec":>7}')
    for ns, p in sorted(probes.items()):
        ref = p["event_busy_ns"]
        for mode, label in ((0, "idle"), (1, "busy")):
            k = got.get((ns, mode))
            if k is None or not k.get("timed_count"):
                print(f"FAIL spin<{ns},{mode}> ({label} stream): no timed kernel in the report")
                bad += 1
                continue
            g = k["median_gpu_ns"]
            err = g - ref
            worst = max(worst, abs(err) / ref)
            tol = max(1000.0, 0.10 * ref)
            verdict = "ok" if abs(err) <= tol else "FAIL"
            inside = p["inside_idle_ns"] if mode == 0 else p["inside_busy_ns"]
            print(f'{f"spin<{ns},{mode}>":>14} {inside:9.0f} {p["event_idle_ns"]:9.0f} {ref:9.0f} {g:9.0f} '
                  f'{k["timed_count"]:6d} {p["launch_host_ns"]:8.0f} {p["event_record_host_ns"]:7.0f}  {verdict}'
                  f' ({label} stream: gpuspy {err:+.0f} ns against events around queued kernels)')
            if verdict != "ok":
                bad += 1
    print(f"span error at most {100 * worst:.1f}% of the kernel's duration; "
          f"{len(probes)} sizes x idle/busy stream; {bad} outside max(1 us, 10%)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
