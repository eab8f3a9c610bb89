#!/usr/bin/env bash
# tests/report/text_layout.sh: the text report's first screen and its width (issue 31) on four programs of
# the tests (demo_infer, gpu_memory, pool_memory keep, multithread_streams), each recorded here with its
# simulated settings from tests/apps/sim_env.txt; text_layout.py checks each report.
# usage: text_layout.sh GPUSPY APPS_DIR WORKDIR
set -uo pipefail
gpuspy=$1 apps=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" || exit 2
caps=()
while read -r name binary args; do
    mapfile -t vars < <(awk -v n="$name" '$1 == n { for (i = 2; i <= NF; i++) print $i }' "$here/../apps/sim_env.txt")
    env "${vars[@]}" "$gpuspy" record --sim -f -o "$work/$name.gspy" -- "$apps/$binary" $args > "$work/$name.out" 2>&1 ||
        { cat "$work/$name.out" >&2; echo "text_layout.sh: FAIL: record $name" >&2; exit 1; }
    caps+=("$work/$name.gspy")
done <<'LIST'
demo_infer demo_infer
gpu_memory gpu_memory.static
pool_memory pool_memory.static keep
multithread_streams multithread_streams.static
LIST
python3 "$here/text_layout.py" "$gpuspy" "${caps[@]}"
