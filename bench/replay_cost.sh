#!/usr/bin/env bash
# replay_cost.sh: what the replay costs (issue 27): a synthetic capture of RECORDS records (bench/gen_capture:
# the synthetic mix of synth_stream.h), then, in turn each round, `gpuspy report` (streaming, no replay past its
# budget of kept calls), `gpuspy whatif --fix graphs` (the capture held in memory, its dependency graph built and
# replayed unchanged and with one fix) and `gpuspy whatif` (every fix alone). Prints each one's wall time and peak
# RSS per round and the ratios to report taken within the round, as median [min-max].
# Usage: bench/replay_cost.sh BUILD_DIR [RECORDS=10000000] [ROUNDS=3]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
N=${2:-10000000}
ROUNDS=${3:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BUILD/bin/gen_capture" "$N" "$WORK/raw.bin" "$WORK/synth.gspy" >/dev/null
rm -f "$WORK/raw.bin"
time_of() {  # prints "seconds kib"
    /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>&1 || true
    cat "$WORK/t"
}
configs=(report whatif1 whatif_all)
for ((r = 0; r < ROUNDS; ++r)); do
    for ((i = 0; i < ${#configs[@]}; ++i)); do
        c=${configs[$(((i + r) % ${#configs[@]}))]}
        case $c in
        report) t=$(time_of "$BUILD/bin/gpuspy" report "$WORK/synth.gspy") ;;
        whatif1) t=$(time_of "$BUILD/bin/gpuspy" whatif --fix graphs "$WORK/synth.gspy") ;;
        whatif_all) t=$(time_of "$BUILD/bin/gpuspy" whatif "$WORK/synth.gspy") ;;
        esac
        echo "$c,$r $t" >> "$WORK/results"
        echo "round $r: $c $t (s KiB)"
    done
done
python3 - "$ROUNDS" "$WORK/results" <<'PY'
import statistics, sys
rounds = int(sys.argv[1])
res = {}
for line in open(sys.argv[2]):
    key, secs, kib = line.split()
    res[key] = f"{secs} {kib}"
for c in ("whatif1", "whatif_all"):
    ratios = [float(res[f"{c},{r}"].split()[0]) / float(res[f"report,{r}"].split()[0]) for r in range(rounds)]
    mem = [int(res[f"{c},{r}"].split()[1]) / int(res[f"report,{r}"].split()[1]) for r in range(rounds)]
    print(f"{c:10} / report: time x{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}], "
          f"peak RSS x{statistics.median(mem):.1f}")
PY
