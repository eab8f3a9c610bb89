#!/usr/bin/env python3
"""tests/report/spin_cpu.py: spin-wait's saving against the host CPU time the fix really frees. Runs the
busy-waiting program (host_work spin) and its fix (blocking_wait) plainly on the simulated driver, RUNS times
each, and takes the median CPU time (user + system) of each; the true saving is their difference. The
finding's host_cpu_savings_ns, from the report of a recorded spin run (REPORT), must lie within 1.5x of it.
usage: spin_cpu.py REPORT PROGRAM [RUNS]"""
import json
import resource
import statistics
import subprocess
import sys


def cpu_ns(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1e9 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def main():
    report, program = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    cpu = {mode: statistics.median(cpu_ns([program, mode]) for _ in range(runs)) for mode in ("spin", "blocking_wait")}
    freed = cpu["spin"] - cpu["blocking_wait"]
    findings = [f for f in json.load(open(report))["findings"] if f["rule"] == "spin-wait"]
    if not findings:
        print("FAIL: no spin-wait finding in " + report)
        return 1
    said = findings[0]["host_cpu_savings_ns"]
    ratio = said / freed if freed > 0 else float("inf")
    ok = freed > 0 and 1 / 1.5 <= ratio <= 1.5
    print(f"{'ok  ' if ok else 'FAIL'} spin-wait: host CPU to free {said / 1e6:.2f} ms, the fix freed {freed / 1e6:.2f} ms "
          f"(CPU median over {runs} runs: spin {cpu['spin'] / 1e6:.2f} ms, blocking_wait {cpu['blocking_wait'] / 1e6:.2f} ms), "
          f"said/freed {ratio:.2f}, within 1.5x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
