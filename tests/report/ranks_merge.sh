#!/usr/bin/env bash
# tests/report/ranks_merge.sh: the captures of several ranks read as one run (issue 29, "Ranks and nodes").
# rank_launcher starts 3 ranks of APP (RANK, WORLD_SIZE, ... set, as torchrun does), each preloaded with the
# shim and writing its own capture through GPUSPY_OUTPUT=rank-%q{RANK}%q{UNSET}-%h-%p.gspy; rank 1 with the
# test-only clock offset GPUSPY_TEST_CLOCK_OFFSET_NS (its monotonic times moved, its wall-clock stamp not).
# Checked: the names (%q{RANK}, an unset variable empty, %h the host, %p the writer's pid); `gpuspy report`
# of the three captures is one report naming each rank, world size and host (and each device's UUID); its clock alignment puts rank
# 1 back by the known offset within 10 us (wall-clock pairs: one host, no collective) and the others within
# 10 us of 0, and says so in its notes; rank 1's times, off by the offset in its own report, are beside the
# others' in the merged one; each capture carries its Identity at the start and the end. `record -o` expands
# the same patterns (%p: gpuspy's pid).
# usage: ranks_merge.sh GPUSPY RANK_LAUNCHER LIBGPUSPY APP WORKDIR
set -uo pipefail
gpuspy=$1 launcher=$2 shim=$3 app=$4 work=$5
rm -rf "$work" && mkdir -p "$work" || exit 2
offset=1234567890123  # ns, about 20 minutes: rank 1's clock reads this much ahead
host=$(uname -n)
GPUSPY_OUTPUT="$work/rank-%q{RANK}%q{GPUSPY_TEST_NO_SUCH_VARIABLE}-%h-%p.gspy" \
    "$launcher" --env-for 1 GPUSPY_TEST_CLOCK_OFFSET_NS=$offset 3 -- env LD_PRELOAD="$shim" "$app" \
    > "$work/launch.out" 2>&1 || { cat "$work/launch.out"; exit 1; }
files=()
for r in 0 1 2; do
    f=("$work"/rank-$r-"$host"-*.gspy)
    [[ ${#f[@]} -eq 1 && -f ${f[0]} ]] || { echo "FAIL: rank $r: no single capture rank-$r-$host-PID.gspy"; ls "$work"; exit 1; }
    files+=("${f[0]}")
    "$gpuspy" report --format json "${f[0]}" > "$work/single$r.json" || exit 1
done
"$gpuspy" report --format json "${files[@]}" > "$work/merged.json" || exit 1
"$gpuspy" report --width 160 "${files[@]}" > "$work/merged.txt" || exit 1
"$gpuspy" dump "${files[1]}" > "$work/dump1.txt" || exit 1
# record -o: the same patterns, %p being gpuspy's own pid.
RANK=5 "$gpuspy" record --sim -f -o "$work/rec-%q{RANK}-%h-%p.gspy" --format json -- "$app" > "$work/rec.json" 2> "$work/rec.err" &
recpid=$!
wait $recpid || { cat "$work/rec.err"; exit 1; }
python3 - "$work" "$host" "$offset" "$recpid" "${files[@]}" <<'PY'
import json, os, re, sys
work, host, offset, recpid = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
files = sys.argv[5:]
results = []
check = lambda ok, what: results.append((bool(ok), what))
tol = 10_000  # ns: the issue's bound

merged = json.load(open(f"{work}/merged.json"))
procs = merged["processes"]
check(len(procs) == 3, f"merged: 3 processes ({len(procs)})")
by_rank = {p["rank"]: p for p in procs}
check(sorted(by_rank) == [0, 1, 2], f"merged: ranks 0, 1, 2 ({sorted(by_rank)})")
for r, p in by_rank.items():
    check(p["world_size"] == 3 and p["local_rank"] == r and p["launcher"] == "torchrun",
          f"rank {r}: world 3, local rank {r}, torchrun ({p['world_size']}, {p['local_rank']}, {p['launcher']!r})")
    check(p["host"] == host, f"rank {r}: host {host} ({p['host']!r})")
    if 0 <= r < len(files):
        check(p["capture"] == files[r], f"rank {r}: capture {files[r]} ({p['capture']})")
        m = re.search(r"rank-(\d+)-(.+)-(\d+)\.gspy$", os.path.basename(files[r]))
        check(m and int(m.group(1)) == r and m.group(2) == host and int(m.group(3)) == p["pid"],
              f"rank {r}: file name rank-{r}-{host}-{p['pid']}.gspy ({os.path.basename(files[r])})")

devs = merged["devices"]
check(len(devs) == 3 and all(d["host"] == host and d["uuid"].startswith("GPU-") for d in devs),
      f"merged: a device row per rank, each with its host and UUID ({[(d['pid'], d['host'], d['uuid']) for d in devs]})")

align = {a["capture"]: a for a in merged.get("clock_alignment", [])}
check(len(align) == 3, f"merged: clock_alignment for 3 captures ({len(align)})")
for r, f in enumerate(files):
    a = align.get(f)
    if not a:
        continue
    want = -offset if r == 1 else 0
    check(abs(a["shift_ns"] - want) <= tol,
          f"rank {r}: shifted by {a['shift_ns']} ns, the known {want} within {tol} ns (off by {a['shift_ns'] - want})")
    check(a["basis"] == ("reference" if r == 0 else "wall_clock"), f"rank {r}: basis {a['basis']}")
    check(r == 0 or a["same_host"], f"rank {r}: on the first capture's host")
check(any("3 captures read as one run" in n for n in merged["notes"]), "merged: a note says how the clocks were put together")

# Rank 1's own report is ~offset ahead of rank 0's; merged, the ranks ran side by side.
single = [json.load(open(f"{work}/single{r}.json"))["processes"][0] for r in range(3)]
lag = single[1]["active_begin_ns"] - single[0]["active_begin_ns"]
check(abs(lag - offset) < 60e9, f"alone: rank 1 begins {lag / 1e9:.1f} s after rank 0 (the offset: {offset / 1e9:.1f} s)")
lag = by_rank[1]["active_begin_ns"] - by_rank[0]["active_begin_ns"]
check(abs(lag) < 60e9, f"merged: rank 1 begins {lag / 1e9:.3f} s from rank 0")
check(abs(by_rank[1]["active_begin_ns"] - single[1]["active_begin_ns"] + offset) <= tol,
      "merged: rank 1's times moved back by the offset")

text = open(f"{work}/merged.txt").read()
check(re.search(r"^\s*1/3\s+" + re.escape(host), text, re.M), "text: a process row reads '1/3  HOST'")
dump = open(f"{work}/dump1.txt").read()
ids = re.findall(r'Identity (start|end) rank=1 local_rank=1 world=3 local_world=3 launcher=torchrun host="?([^"\s]+)"?', dump)
check([e for e, _ in ids] == ["start", "end"] and all(h == host for _, h in ids),
      f"dump: Identity start and end of rank 1 on {host} ({ids})")

rec = f"{work}/rec-5-{host}-{recpid}.gspy"
check(os.path.isfile(rec), f"record -o: {os.path.basename(rec)} exists")
rp = json.load(open(f"{work}/rec.json"))["processes"]
check(len(rp) == 1 and rp[0]["rank"] == 5, f"record: the process's rank 5 through the collector's socket ({[p['rank'] for p in rp]})")

failed = [w for ok, w in results if not ok]
for ok, w in results:
    print(("ok   " if ok else "FAIL ") + w)
sys.exit(1 if failed else 0)
PY
