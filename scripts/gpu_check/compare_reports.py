#!/usr/bin/env python3
"""compare_reports.py: the facts of one program's gpuspy report on the real driver against the same
program's report on the simulated driver (whose reports tests/report checks against ground truth).

Usage: compare_reports.py REAL.json SIM.json NAME [EXPECT.txt...]
Prints one line per fact group and exits 1 if any fact differs. Compared exactly: transfers (count and
bytes per direction x host memory x mode), kernels (count per name), launches (count, graph launches),
syncs (count per api x implicit). Findings: the `present RULE ...` and `absent RULE...` lines of the
program's tests/report/expect files must hold for the real report (findings weigh measured times, so
they are checked against what the program is known to do, not against the simulated run).""" 
import json
import sys



def expected_findings(paths):
    present, absent = set(), set()
    for path in paths:
        with open(path) as f:
            for line in f:
                words = line.split()
                if words and words[0] == "present":
                    present.add(words[1])
                elif words and words[0] == "absent":
                    absent.update(words[1:])
    return present, absent


def facts(report):
    transfers = {}
    for t in report.get("transfers", []):
        key = f'{t["direction"]}/{t["host_memory"]}/{t["mode"]}'
        c, b = transfers.get(key, (0, 0))
        transfers[key] = (c + t["count"], b + t["bytes"])
    kernels = {}
    for k in report.get("kernels", []):
        kernels[k["name"]] = kernels.get(k["name"], 0) + k["count"]
    syncs = {}
    for s in report.get("syncs", []):
        key = f'{s["api"]}{" (implicit)" if s["implicit"] else ""}'
        syncs[key] = syncs.get(key, 0) + s["count"]
    launches = report.get("launches", {})
    return {
        "transfers": transfers,
        "kernels": kernels,
        "launches": {"count": launches.get("count"), "graph_launches": launches.get("graph_launches")},
        "syncs": syncs,
        "processes": len(report.get("processes", [])),
        "dropped": sum(p.get("dropped_records", 0) for p in report.get("processes", [])),
    }


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        real = json.load(f)
    with open(sys.argv[2]) as f:
        sim = json.load(f)
    name = sys.argv[3]
    fr, fs = facts(real), facts(sim)
    bad = 0
    for group in ("processes", "transfers", "kernels", "launches", "syncs"):
        if fr[group] == fs[group]:
            print(f"  ok   {name}: {group}: {json.dumps(fr[group], sort_keys=True)[:200]}")
        else:
            bad += 1
            print(f"  FAIL {name}: {group}: real {json.dumps(fr[group], sort_keys=True)}")
            print(f"  FAIL {name}: {group}: sim  {json.dumps(fs[group], sort_keys=True)}")
    if fr["dropped"]:
        bad += 1
        print(f"  FAIL {name}: {fr['dropped']} records dropped on the real driver")
    rules = sorted({f["rule"] for f in real.get("findings", [])})
    present, absent = expected_findings(sys.argv[4:])
    wrong = sorted(present - set(rules)) + sorted(absent & set(rules))
    if wrong:
        bad += 1
        print(f"  FAIL {name}: findings: expected {sorted(present)} and none of {sorted(absent)}, got {rules}")
    else:
        print(f"  ok   {name}: findings: {rules} (expected {sorted(present)}, none of {sorted(absent)})")
    busy = [f'{d.get("busy_pct", 0):.1f}%' for d in real.get("devices", [])]
    print(f"  info {name}: real GPU busy {busy}, findings {rules}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
