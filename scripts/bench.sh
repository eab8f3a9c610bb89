#!/usr/bin/env bash
# scripts/bench.sh: builds gpuspy in Release (build-release/) and runs every benchmark: the hook path
# (direct vs through libgpuspy.so, in one process), stack capture, an end-to-end launch-bound loop on
# the simulated driver with and without the shim, the app's memory per thread, and the collector
# (ingest rate, `gpuspy report` on a 10 M-record capture, bytes per record). Prints one table of
# ratios (with shim / without, measured in this run) against the targets of issue 6 and writes
# bench/RESULTS.md. Never run by CI or ctest: the numbers depend on the machine.
#
#   scripts/bench.sh [--quick] [--no-build] [--results FILE] [--keep]
#     --quick       short runs (smoke test of the harness; the figures are not worth recording)
#     --no-build    use build-release as it is
#     --results F   write the results there instead of bench/RESULTS.md (--quick: default none)
#     --keep        keep the raw JSON and captures (their folder is printed)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${GPUSPY_BENCH_BUILD:-$ROOT/build-release}
QUICK=0
BUILD_IT=1
KEEP=0
RESULTS=""
COMMAND_LINE="scripts/bench.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --no-build) BUILD_IT=0 ;;
    --keep) KEEP=1 ;;
    --results) RESULTS=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$RESULTS" ] && [ $QUICK = 0 ]; then RESULTS=$ROOT/bench/RESULTS.md; fi

if [ $QUICK = 1 ]; then
  REPS=2; MIN_TIME=0.005; E2E_REPS=2; E2E_LAUNCHES=20000; E2E_STEPS=5000; MEM_REPS=1
  REPORT_RECORDS=1000000; SMALL_RECORDS=200000; COLLECTOR_FILTER='--benchmark_repetitions=1'
else
  REPS=10; MIN_TIME=0.01; E2E_REPS=15; E2E_LAUNCHES=50000; E2E_STEPS=15000; MEM_REPS=3
  REPORT_RECORDS=10000000; SMALL_RECORDS=1000000; COLLECTOR_FILTER=''
fi

# The tree the binaries are built from (others may be editing it while this runs): its commit and the
# files that differed from it then, for the results' header.
TREE_STATE="built=$(date -u '+%Y-%m-%d %H:%M UTC')
commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null)
$(git -C "$ROOT" status --porcelain 2>/dev/null | sed 's/^...//; s/^/changed=/')"
if [ $BUILD_IT = 0 ]; then TREE_STATE="built=unknown (--no-build: build-release as it was)"; fi
if [ $BUILD_IT = 1 ]; then
  echo "== build (Release) in $BUILD" >&2
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPUSPY_BUILD_APPS=OFF -DGPUSPY_BUILD_BENCH=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target gpuspy simcuda hook_bench stack_bench stream_sink e2e_loop \
    thread_mem collector_bench gen_capture gpuspy_cli >&2
fi
BIN=$BUILD/bin
SHIM=$BUILD/lib/libgpuspy.so
SIMDIR=$BUILD/lib/simcuda
for f in "$SHIM" "$SIMDIR/libcuda.so.1" "$BIN/hook_bench" "$BIN/gpuspy" "$BIN/stream_sink"; do
  [ -e "$f" ] || { echo "bench.sh: $f was not built" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/gpuspy-bench.XXXXXX)
cleanup() { if [ $KEEP = 0 ]; then rm -rf "$WORK"; else echo "bench.sh: raw results kept in $WORK" >&2; fi; }
trap cleanup EXIT
printf '%s\n' "$TREE_STATE" >"$WORK/tree.txt"
export LD_LIBRARY_PATH=$SIMDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SIMCUDA_QUIET=1

# ---- 1. hook path: one process per configuration (gpuspy reads its environment once)
# name | preload | GPUSPY_STACK_DEPTH | GPUSPY_GPU_TIME | SIMCUDA_HOST_COST | benchmark filter | GPUSPY_STACK_FP
# [| GPUSPY_PAUSED: 1 = the dormant shim, every call outside a capture window]
EVENT_COST='cuLaunchKernel=0,cuMemcpyHtoDAsync=0,cuStreamQuery=0,cuStreamSynchronize=0,cuMemAllocHost=0,cuMemAlloc=0'
HOOK_VARIANTS=(
  "noshim|0|0|0|0|.|1"
  "nostack|1|0|0|0|.|1"
  "gpu_sim0|1|0|1|0|.|1"
  "gpu_event|1|0|1|$EVENT_COST|.|1"
  "stack8|1|8|0|0|launch|1"
  "stack24|1|24|0|0|.|1"
  "stack64|1|64|0|0|launch|1"
  "stack8_unw|1|8|0|0|launch|0"
  "stack24_unw|1|24|0|0|.|0"
  "stack64_unw|1|64|0|0|launch|0"
  "full_event|1|24|1|$EVENT_COST|.|1"
  "dormant|1|24|1|0|.|1|1"
)
for v in "${HOOK_VARIANTS[@]}"; do
  IFS='|' read -r name preload depth gpu cost filter fp paused <<<"$v"
  echo "== hook_bench $name" >&2
  args=(--benchmark_filter="$filter" --benchmark_min_time=$MIN_TIME --benchmark_enable_random_interleaving=true
        --benchmark_out="$WORK/hook-$name.json" --benchmark_out_format=json)
  # Lanes of 128 Ki items per thread (16 MiB each; default 4 Ki): one run's records must fit while the
  # drain catches up (hook_bench pauses after each hooked run); see bench/NOTES.md.
  envs=(BENCH_REPETITIONS=$REPS GPUSPY_QUEUE_ITEMS=131072 GPUSPY_STACK_DEPTH=$depth BENCH_CALL_DEPTH=$depth GPUSPY_GPU_TIME=$gpu
        GPUSPY_STACK_FP=$fp SIMCUDA_HOST_COST=$cost GPUSPY_PAUSED=${paused:-0})
  if [ "$preload" = 1 ]; then
    sock=$WORK/sink-$name.sock
    "$BIN/stream_sink" --socket "$sock" --timeout 120 >"$WORK/sink-$name.json" &
    sink=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
    env "${envs[@]}" GPUSPY_SOCKET="$sock" LD_PRELOAD="$SHIM" "$BIN/hook_bench" "${args[@]}" >"$WORK/hook-$name.txt" \
      || echo "bench.sh: hook_bench $name failed" >&2
    wait $sink || echo "bench.sh: no shim stream for $name" >&2
  else
    env "${envs[@]}" "$BIN/hook_bench" "${args[@]}" >"$WORK/hook-$name.txt" || echo "bench.sh: hook_bench $name failed" >&2
  fi
done

# ---- 2. stack capture alone
if [ -x "$BIN/stack_bench" ]; then
  echo "== stack_bench" >&2
  "$BIN/stack_bench" --benchmark_min_time=$MIN_TIME --benchmark_repetitions=$REPS --benchmark_report_aggregates_only=true \
    --benchmark_out="$WORK/stack.json" --benchmark_out_format=json >"$WORK/stack.txt"
fi

# ---- 3. end to end: the same loop without and with the shim, runs interleaved, host costs modelled
# name | preload | GPUSPY_STACK_DEPTH | GPUSPY_GPU_TIME
E2E_CONFIGS=("none|0|0|0" "shim_nostack|1|0|0" "shim_gpu|1|0|1" "shim_full|1|24|1")
export SIMCUDA_KERNEL_DEFAULT_NS=1000  # launch-bound: a 1 us kernel behind a 3 us launch
: >"$WORK/e2e.jsonl"
for rep in $(seq "$E2E_REPS"); do
  for mode in launch mixed; do
    n=$E2E_LAUNCHES; [ $mode = mixed ] && n=$E2E_STEPS
    for c in "${E2E_CONFIGS[@]}"; do
      IFS='|' read -r name preload depth gpu <<<"$c"
      echo "== e2e $mode $name ($rep/$E2E_REPS)" >&2
      if [ "$preload" = 1 ]; then
        out=$WORK/e2e-$mode-$name-$rep.gspy
        line=$(env GPUSPY_STACK_DEPTH=$depth GPUSPY_GPU_TIME=$gpu GPUSPY_OUTPUT="$out" LD_PRELOAD="$SHIM" "$BIN/e2e_loop" $mode $n) \
          || { echo "bench.sh: e2e_loop $mode $name failed" >&2; continue; }
        sink=$("$BIN/stream_sink" "$out") || sink='{}'
        [ "$rep" = 1 ] || rm -f "$out"
      else
        line=$("$BIN/e2e_loop" $mode $n) || { echo "bench.sh: e2e_loop $mode failed" >&2; continue; }
        sink='{}'
      fi
      echo "{\"config\":\"$name\",\"rep\":$rep,\"run\":$line,\"sink\":$sink}" >>"$WORK/e2e.jsonl"
    done
  done
done
unset SIMCUDA_KERNEL_DEFAULT_NS
# A real shim stream as the collector would store it (zstd chunks): bytes per record.
for mode in launch mixed; do
  "$BIN/gen_capture" --convert "$WORK/e2e-$mode-shim_full-1.gspy" "$WORK/e2e-$mode-full.capture.gspy" \
    >"$WORK/convert-$mode.json" || echo "bench.sh: converting the $mode capture failed" >&2
done

# ---- 4. the app's memory per thread
: >"$WORK/mem.jsonl"
for rep in $(seq "$MEM_REPS"); do
  for t in 1 2 4 8 16 32 64; do
    for c in none shim shim_nostack; do
      echo "== thread_mem $t $c ($rep/$MEM_REPS)" >&2
      case $c in
        shim) line=$(env GPUSPY_OUTPUT="$WORK/mem-%p.gspy" LD_PRELOAD="$SHIM" "$BIN/thread_mem" $t) || line='{}' ;;
        shim_nostack) line=$(env GPUSPY_STACK_DEPTH=0 GPUSPY_OUTPUT="$WORK/mem-%p.gspy" LD_PRELOAD="$SHIM" "$BIN/thread_mem" $t) || line='{}' ;;
        *) line=$("$BIN/thread_mem" $t) || line='{}' ;;
      esac
      echo "{\"config\":\"$c\",\"rep\":$rep,\"run\":$line}" >>"$WORK/mem.jsonl"
    done
  done
done
rm -f "$WORK"/mem-*.gspy*

# ---- 5. the collector
echo "== collector_bench" >&2
"$BIN/collector_bench" $COLLECTOR_FILTER --benchmark_out="$WORK/collector.json" --benchmark_out_format=json >"$WORK/collector.txt" \
  || echo "bench.sh: collector_bench failed" >&2
: >"$WORK/report.jsonl"
for n in $SMALL_RECORDS $REPORT_RECORDS; do
  echo "== gen_capture $n" >&2
  "$BIN/gen_capture" $n "$WORK/synth-$n.stream" "$WORK/synth-$n.gspy" >"$WORK/gen-$n.json" || { echo "bench.sh: gen_capture failed" >&2; continue; }
  for file in "$WORK/synth-$n.stream" "$WORK/synth-$n.gspy"; do
    runs=2; { [ $QUICK = 1 ] || [ "${file##*.}" = gspy ]; } && runs=1
    for r in $(seq $runs); do
      echo "== gpuspy report $(basename "$file") ($r/$runs)" >&2
      /usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$BIN/gpuspy" report "$file" >"$WORK/report-out.txt" 2>"$WORK/report-err.txt" \
        || echo "bench.sh: gpuspy report $file failed: $(head -c 300 "$WORK/report-err.txt")" >&2
      read -r secs maxkib < <(tail -n 1 "$WORK/time.txt")
      echo "{\"records\":$n,\"file\":\"$(basename "$file")\",\"run\":$r,\"seconds\":$secs,\"max_rss_kib\":$maxkib}" >>"$WORK/report.jsonl"
    done
  done
  rm -f "$WORK/synth-$n.stream" "$WORK/synth-$n.gspy"
done

# ---- 6. the table and RESULTS.md
echo "load_end=$(cat /proc/loadavg)" >>"$WORK/tree.txt"
python3 "$ROOT/bench/summarize.py" --work "$WORK" --root "$ROOT" --command "$COMMAND_LINE" \
  ${RESULTS:+--results "$RESULTS"} $([ $QUICK = 1 ] && echo --quick)
