#!/usr/bin/env bash
# tests/collector/fuzz/run_fuzz.sh: builds the collector's libFuzzer targets with clang (ASan+UBSan)
# and runs one for a bounded time on a seed corpus, then on the kept regression inputs.
# usage: run_fuzz.sh TARGET SOURCE_DIR WORK_DIR SECONDS [SEED_FILE...]
#   TARGET is capture_reader or stream_ingest. Exits 0 when clang++ is missing (the test is skipped).
set -euo pipefail
target=$1 src=$2 work=$3 seconds=$4
shift 4
command -v clang++ >/dev/null || { echo "clang++ not installed: fuzzing skipped"; exit 0; }
mkdir -p "$work/corpus_$target"
bin="$work/fuzz_$target"
sources=("$src/tests/collector/fuzz/fuzz_$target.cpp" "$src/wire/codec.cpp" "$src/wire/time_shift.cpp" "$src/collector/ingest/ingest.cpp"
         "$src/collector/ingest/capture_file.cpp" "$src/collector/report/dump.cpp")
# The capture reader feeds the streaming report, as `gpuspy report` does.
# Its model's result names come from a file the build generates from cuda.h (GPUSPY_GENERATED_INCLUDE, the
# build's collector/generated).
[ "$target" = capture_reader ] && sources+=("$src"/collector/analyze/*.cpp "$src"/collector/findings/*.cpp "$src"/collector/timeline/*.cpp "$src"/collector/model/*.cpp)
generated=${GPUSPY_GENERATED_INCLUDE:-}
[ "$target" = capture_reader ] && { [ -n "$generated" ] && [ -f "$generated/cuda_results.inc" ] ||
  { echo "run_fuzz.sh: GPUSPY_GENERATED_INCLUDE must name the build's collector/generated (cuda_results.inc)" >&2; exit 2; }; }
newest=$(ls -t "${sources[@]}" "$src"/collector/*/*.h "$src"/wire/*.h "$src"/wire/*.def | head -1)
if [ ! -x "$bin" ] || [ "$newest" -nt "$bin" ]; then
  echo "building $bin"
  clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src" ${generated:+-I"$generated"} "${sources[@]}" $(pkg-config --cflags --libs fmt libzstd) -o "$bin"
fi
for seed in "$@"; do
  [ -f "$seed" ] && cp "$seed" "$work/corpus_$target/" || true
done
regressions="$src/tests/collector/fuzz/regressions_$target"
if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
  "$bin" -runs=1 "$regressions"/*  # each kept crash input must now pass
fi
"$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/crash_$target-" "$work/corpus_$target"
