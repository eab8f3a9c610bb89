#!/usr/bin/env bash
# tests/report/ranks_export.sh: `gpuspy export` and `gpuspy view` of several captures (the ranks of one job) as
# one run, as `gpuspy report` reads them (issue 29, "Ranks and nodes"; ranks_merge.sh checks the report).
# rank_launcher starts 2 ranks of APP, each preloaded with the shim, writing its own capture
# (GPUSPY_OUTPUT=rank-%q{RANK}-%p.gspy) and the simulated driver's ground truth (SIMCUDA_TRACE); rank 1 with
# the test-only clock offset GPUSPY_TEST_CLOCK_OFFSET_NS (its capture's monotonic times ~20 minutes ahead).
# Checked:
#  - perfetto of both: both processes, each its own pid track, named with its host and rank; every kernel,
#    copy and memset each rank's process ran (the truth's count per kind) on that process's tracks; each
#    measured one within 1 ms of the truth's start (rank 1 unaligned would be 20 minutes off); and each
#    exactly where the rank's own export has it moved by the alignment's shift, which is the known offset
#    within 10 us (the alignment's bound on one host, as ranks_merge.sh); the clock alignment on stderr;
#  - json of both: one report of both processes with the clock alignment; folded of both: a root frame per
#    rank; pprof of both: its totals those of the report of both (tests/viewer/check_pprof.py), its
#    samples labelled with rank, host and capture; kineto of both: one directory, a file per rank (rank-0, rank-1, world 2), one time base, each
#    rank's GPU events at the truth's times (1 ms) and as many as its process ran;
#  - view of both: one page whose embedded data holds both processes (capture, host, rank), their stream
#    tracks and GPU spans at the truth's times (1 ms), and the alignment's notes;
#  - errors: a capture that cannot be read is named (exit 1); --run with several captures is a usage
#    error (exit 2) in export and view; a damaged capture among several is named, what came before it kept.
# usage: ranks_export.sh GPUSPY RANK_LAUNCHER LIBGPUSPY APP WORKDIR
set -uo pipefail
gpuspy=$1 launcher=$2 shim=$3 app=$4 work=$5
rm -rf "$work" && mkdir -p "$work/truth" || exit 2
offset=1234567890123  # ns, about 20 minutes: rank 1's clock reads this much ahead
host=$(uname -n)
GPUSPY_OUTPUT="$work/rank-%q{RANK}-%p.gspy" \
    "$launcher" --env-for 1 GPUSPY_TEST_CLOCK_OFFSET_NS=$offset 2 -- \
    env LD_PRELOAD="$shim" SIMCUDA_TRACE="$work/truth/%p.jsonl" "$app" > "$work/launch.out" 2>&1 ||
    { cat "$work/launch.out"; exit 1; }
files=()
for r in 0 1; do
    f=("$work"/rank-$r-*.gspy)
    [[ ${#f[@]} -eq 1 && -f ${f[0]} ]] || { echo "FAIL: rank $r: no single capture rank-$r-PID.gspy"; ls "$work"; exit 1; }
    files+=("${f[0]}")
    "$gpuspy" dump "${f[0]}" > "$work/dump$r.txt" || exit 1
    "$gpuspy" export "${f[0]}" --format perfetto -o "$work/single$r.trace.json" 2> "$work/single$r.err" ||
        { cat "$work/single$r.err"; exit 1; }
done
run() {  # NAME CMD...: runs CMD, its exit status, stdout and stderr kept as NAME.rc/.out/.err
    local name=$1
    shift
    "$@" > "$work/$name.out" 2> "$work/$name.err"
    echo $? > "$work/$name.rc"
}
run perfetto "$gpuspy" export "${files[@]}" --format perfetto -o "$work/merged.trace.json"
run json "$gpuspy" export "${files[@]}" --format json -o "$work/merged.json"
run folded "$gpuspy" export "${files[@]}" --format folded --metric calls -o "$work/merged.folded"
run kineto "$gpuspy" export "${files[@]}" --format kineto -o "$work/kineto"
run pprof "$gpuspy" export "${files[@]}" --format pprof -o "$work/merged.pb.gz"
"$gpuspy" report --format json "${files[@]}" > "$work/report.json" || exit 1
# The profile of both against the report of both (tests/viewer/check_pprof.py: its totals are every process's).
python3 "$(dirname "${BASH_SOURCE[0]}")/../viewer/check_pprof.py" "$work/merged.pb.gz" "$work/report.json" > "$work/pprof_check.out" 2>&1
echo $? > "$work/pprof_check.rc"
run view "$gpuspy" view "${files[@]}" -o "$work/merged.html"
# Errors.
printf 'not a capture\n' > "$work/bogus.gspy"
run err_missing "$gpuspy" export "${files[0]}" "$work/no-such.gspy" --format perfetto -o "$work/x.trace.json"
run err_bogus_view "$gpuspy" view "${files[0]}" "$work/bogus.gspy" -o "$work/x.html"
run err_run_export "$gpuspy" export "${files[@]}" --format perfetto --run 1 -o "$work/y.trace.json"
run err_run_view "$gpuspy" view "${files[@]}" --run 1 -o "$work/y.html"
# Rank 1's capture cut inside its last chunk (its header: 32 bytes, then chunks of a 24-byte header and
# storedSize bytes, collector/ingest/capture_file.h): its stream kept, the damage after it.
python3 - "${files[1]}" "$work/cut.gspy" <<'CUT' || exit 1
import struct, sys
b = open(sys.argv[1], "rb").read()
at, last = struct.unpack_from("<I", b, 16)[0], None
while at + 24 <= len(b):
    last = at
    at += 24 + struct.unpack_from("<I", b, at + 16)[0]
assert last is not None and last > 32, "a capture of more than one chunk"
open(sys.argv[2], "wb").write(b[:last + 12])
CUT
run err_cut "$gpuspy" export "${files[0]}" "$work/cut.gspy" --format perfetto -o "$work/cut.trace.json"

python3 - "$work" "$host" "$offset" "${files[@]}" <<'PY'
import glob, json, os, re, sys
from decimal import Decimal
work, host, offset = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = sys.argv[4:]
results = []
check = lambda ok, what: results.append((bool(ok), what))
tol = 10_000        # ns: the alignment's bound on one host (ranks_merge.sh)
near = 1_000_000    # ns: a GPU span against the truth (kineto_export.py: a span on a loaded host is us off)
rd = lambda name: open(f"{work}/{name}").read()
rc = lambda name: int(rd(f"{name}.rc"))
for name in ("perfetto", "json", "folded", "kineto", "view"):
    check(rc(name) == 0, f"{name} of both captures: exit 0 ({rc(name)}: {rd(name + '.err').strip()[-300:]})")

# The app's threads (gpuspy's own left out, as report_vs_trace does) and each rank's pid, from its dump.
pid_of, app_threads = {}, set()
for r in (0, 1):
    dump = rd(f"dump{r}.txt")
    for m in re.finditer(r"^pid ([0-9]+) @[0-9]+ Call #[0-9]+ \S+ \S+ tid=([0-9]+) ", dump, re.M):
        app_threads.add((int(m.group(1)), int(m.group(2))))
    pid_of[r] = int(re.search(r"rank-\d+-(\d+)\.gspy$", files[r]).group(1))
kinds = ("kernel", "memcpy", "memset")
truth = {0: [], 1: []}
for path in glob.glob(f"{work}/truth/*.jsonl"):
    for line in open(path):
        e = json.loads(line)
        if e.get("type") == "op" and e.get("op") in kinds and (e["pid"], e["tid"]) in app_threads and not e.get("graph"):
            for r in (0, 1):
                if e["pid"] == pid_of[r]:
                    truth[r].append(e)
for r in (0, 1):
    check(len(truth[r]) > 0, f"truth: rank {r} (pid {pid_of[r]}) ran {len(truth[r])} GPU operations")


def matched(spans, ops):
    """spans: (kind, begin_ns) measured; how many have no truth op of their kind starting within `near`."""
    pool, used, missing = sorted(ops, key=lambda o: o["start"]), set(), 0
    for kind, begin in spans:
        best = None
        for i, o in enumerate(pool):
            if i in used or o["op"] != kind or abs(o["start"] - begin) >= near:
                continue
            if best is None or abs(o["start"] - begin) < abs(pool[best]["start"] - begin):
                best = i
        if best is None:
            missing += 1
        else:
            used.add(best)
    return missing


# ---- perfetto: both processes on one clock.
def gpu_kind(cat):
    k = cat.split(",")[-1]
    return {"kernel": "kernel", "copy": "memcpy", "memset": "memset"}.get(k)


def perfetto(path):
    t = json.load(open(path), parse_float=Decimal)
    ev = t["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    gpu = [e for e in ev if e.get("ph") == "X" and str(e.get("cat", "")).startswith("gpu,")]
    return t, names, gpu


if rc("perfetto") == 0:
    t, names, gpu = perfetto(f"{work}/merged.trace.json")
    check(sorted(names) == sorted(pid_of.values()), f"perfetto: a process track per rank's pid {sorted(pid_of.values())} ({sorted(names)})")
    for r in (0, 1):
        n = names.get(pid_of[r], "")
        check(f"host {host}" in n and f"rank {r} of 2" in n, f"perfetto: rank {r}'s process named with its host and rank ({n!r})")
        mine = [e for e in gpu if e["pid"] == pid_of[r]]
        for k in kinds:
            got, want = sum(gpu_kind(e["cat"]) == k for e in mine), sum(o["op"] == k for o in truth[r])
            check(got == want, f"perfetto: rank {r}: {got} {k} slices, the truth ran {want}")
        measured = [(gpu_kind(e["cat"]), int(e["ts"] * 1000)) for e in mine
                    if not e["args"].get("estimated") and e["args"].get("gpu_time") != "upper_bound"]
        check(measured and matched(measured, truth[r]) == 0,
              f"perfetto: rank {r}: each of its {len(measured)} measured GPU slices within 1 ms of the truth's op "
              f"({matched(measured, truth[r])} not)")
    check(t["otherData"].get("clock_of") == files[0], f"perfetto: the clock is the first capture's ({t['otherData'].get('clock_of')})")
    err = rd("perfetto.err")
    check("2 captures read as one run" in err, f"perfetto: stderr says how the clocks were aligned ({err.strip()[:200]!r})")

# The alignment found (json export: the report's clock_alignment), and the per-rank exports moved by it.
shift = {}
if rc("json") == 0:
    j = json.load(open(f"{work}/merged.json"))
    procs = j["processes"]
    check(sorted(p["rank"] for p in procs) == [0, 1] and all(p["host"] == host for p in procs),
          f"json: one report of both ranks on {host} ({[(p['rank'], p['host']) for p in procs]})")
    shift = {a["capture"]: a["shift_ns"] for a in j.get("clock_alignment", [])}
    check(len(shift) == 2, f"json: the clock alignment of 2 captures ({shift})")
    check(abs(shift.get(files[1], 0) + offset) <= tol and abs(shift.get(files[0], 1)) <= tol,
          f"json: rank 1 moved back by the known offset within {tol} ns ({shift})")
    check(any("2 captures read as one run" in n for n in j["notes"]), "json: a note says how the clocks were put together")
if rc("perfetto") == 0 and len(shift) == 2:
    _, _, gpu = perfetto(f"{work}/merged.trace.json")
    for r in (0, 1):
        _, _, alone = perfetto(f"{work}/single{r}.trace.json")
        want = sorted(int(e["ts"] * 1000) + shift[files[r]] for e in alone)
        got = sorted(int(e["ts"] * 1000) for e in gpu if e["pid"] == pid_of[r])
        check(len(got) == len(want) and all(g == w for g, w in zip(got, want)),
              f"perfetto: rank {r}'s {len(got)} GPU slices are its own export's moved by its shift {shift[files[r]]} ns "
              f"(largest difference {max([abs(g - w) for g, w in zip(got, want)] or [0])} ns)")
    check(abs(shift[files[1]] + offset) <= tol, "perfetto: rank 1's own export is the offset ahead of the merged one")

# ---- folded: a root frame per rank.
if rc("folded") == 0:
    roots = {line.split(";", 1)[0] for line in rd("merged.folded").splitlines() if line}
    check(roots == {"rank 0", "rank 1"}, f"folded: the stacks under a root frame per rank ({sorted(roots)})")

# ---- pprof: the totals of both processes (check_pprof.py), each sample labelled with its rank, host, capture.
check(rc("pprof") == 0 and rc("pprof_check") == 0,
      f"pprof of both captures: its totals are the report's of both ({rd('pprof_check.out').strip()[-300:]!r})")
if rc("pprof") == 0:
    import gzip
    raw = gzip.open(f"{work}/merged.pb.gz").read()
    check(all(w.encode() in raw for w in ["rank", "capture", host] + files),
          "pprof: the string table holds the labels rank, host and capture and both captures' names")

# ---- kineto: one directory, a file per rank, one clock.
if rc("kineto") == 0:
    kfiles = sorted(os.listdir(f"{work}/kineto"))
    check(kfiles == ["rank-0.pt.trace.json", "rank-1.pt.trace.json"], f"kineto: a file per rank ({kfiles})")
    bases = set()
    for r in (0, 1):
        path = f"{work}/kineto/rank-{r}.pt.trace.json"
        if not os.path.exists(path):
            continue
        k = json.load(open(path), parse_float=Decimal)
        bases.add(k["gpuspy"]["base_monotonic_ns"])
        base = k["gpuspy"]["base_monotonic_ns"]
        check(k["distributedInfo"]["rank"] == r and k["distributedInfo"]["world_size"] == 2,
              f"kineto: rank-{r}'s distributedInfo is rank {r} of 2 ({k['distributedInfo']})")
        ev = k["traceEvents"]
        hostpids = {e["pid"] for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")}
        check(hostpids == {pid_of[r]}, f"kineto: rank-{r} holds the calls of rank {r}'s process {pid_of[r]} ({hostpids})")
        cat = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
        kgpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in cat]
        for kk in kinds:
            got, want = sum(cat[e["cat"]] == kk for e in kgpu), sum(o["op"] == kk for o in truth[r])
            check(got == want, f"kineto: rank-{r}: {got} {kk} events, the truth ran {want}")
        measured = [(cat[e["cat"]], base + int(e["ts"] * 1000)) for e in kgpu
                    if not e["args"].get("estimated") and e["args"].get("gpu_time") != "upper_bound"]
        check(measured and matched(measured, truth[r]) == 0,
              f"kineto: rank-{r}: each measured GPU event within 1 ms of the truth ({matched(measured, truth[r])} of {len(measured)} not)")
    check(len(bases) == 1, f"kineto: one time base in both files ({bases})")

# ---- view: one page, both processes.
if rc("view") == 0:
    page = rd("merged.html")
    m = re.search(r'<script type="application/json" id="gpuspy-data">(.*?)</script>', page, re.S)
    check(m, "view: the page embeds its data")
    if m:
        doc = json.loads(m.group(1))
        tl = doc["timeline"]
        procs = tl["processes"]
        check(sorted(p["pid"] for p in procs) == sorted(pid_of.values()), f"view: both processes ({[p['pid'] for p in procs]})")
        for r in (0, 1):
            p = next((p for p in procs if p["pid"] == pid_of[r]), {})
            check(p.get("capture") == files[r] and p.get("host") == host and p.get("rank") == r and f"rank {r}" in p.get("label", ""),
                  f"view: rank {r}'s process names its capture, host and rank ({p})")
        # GPU spans: begin delta-coded from origin_ns; shape -> track -> process.
        g, shapes = tl["gpu"], tl["gpu_shapes"]
        begins, t = [], 0
        for d in g["begin"]:
            t += d
            begins.append(tl["origin_ns"] + t)
        gkinds = tl["gpu_kinds"]
        for r in (0, 1):
            pi = next((i for i, p in enumerate(procs) if p["pid"] == pid_of[r]), -1)
            spans = [(gkinds[shapes["kind"][s]], b, shapes["bound"][s]) for s, b in zip(g["shape"], begins)
                     if tl["tracks"][shapes["track"][s]]["process"] == pi]
            names = {"kernel": "kernel", "copy": "memcpy", "memset": "memset"}
            for kk in kinds:
                got, want = sum(names.get(k) == kk for k, _, _ in spans), sum(o["op"] == kk for o in truth[r])
                check(got == want, f"view: rank {r}: {got} {kk} spans, the truth ran {want}")
            measured = [(names.get(k), b) for k, b, bound in spans if bound == 0]
            check(measured and matched(measured, truth[r]) == 0,
                  f"view: rank {r}: each measured GPU span within 1 ms of the truth ({matched(measured, truth[r])} of {len(measured)} not)")
        notes = doc["report"].get("notes", [])
        check(any("2 captures read as one run" in n for n in notes), "view: the report's notes say how the clocks were put together")
        check(len(doc["report"].get("clock_alignment", [])) == 2, "view: the report carries the clock alignment")

# ---- errors.
e = rd("err_missing.err")
check(rc("err_missing") == 1 and "no-such.gspy" in e, f"export of a missing capture: exit 1 naming it ({rc('err_missing')}: {e.strip()!r})")
check(not os.path.exists(f"{work}/x.trace.json"), "export of a missing capture writes nothing")
e = rd("err_bogus_view.err")
check(rc("err_bogus_view") == 1 and "bogus.gspy" in e and "not a gpuspy capture" in e,
      f"view of a capture that is not one: exit 1 naming it ({rc('err_bogus_view')}: {e.strip()!r})")
for name in ("err_run_export", "err_run_view"):
    e = rd(f"{name}.err")
    check(rc(name) == 2 and "--run takes one capture" in e, f"{name}: --run with several captures is a usage error ({rc(name)}: {e.strip()!r})")
e = rd("err_cut.err")
check(rc("err_cut") == 1 and "cut.gspy" in e and "exported what came before it" in e,
      f"export with a damaged capture: exit 1 naming it ({rc('err_cut')}: {e.strip()[-200:]!r})")
if os.path.exists(f"{work}/cut.trace.json"):
    _, names, _ = perfetto(f"{work}/cut.trace.json")
    check(pid_of[0] in names, f"export with a damaged capture: the intact capture's process is kept ({sorted(names)})")
else:
    check(False, "export with a damaged capture: what came before the damage written")

failed = [w for ok, w in results if not ok]
for ok, w in results:
    print(("ok   " if ok else "FAIL ") + w)
print(f"{len(results) - len(failed)} of {len(results)} checks passed")
sys.exit(1 if failed else 0)
PY
