#!/usr/bin/env bash
# stack_cache_apps.sh: every program given runs under `gpuspy record --sim` twice, with the stack
# cache off (GPUSPY_STACK_CACHE=0: every stack from unw_backtrace or a verified frame-pointer walk)
# and on, address randomisation off (setarch -R) so that both runs place code and stacks alike. The
# runs must give the same multiset of (call, stack frames): each recorded call's API with the return
# addresses of its stack. Run with GPUSPY_STACK_FP=0 too to leave every frame to the cache.
# Usage: stack_cache_apps.sh GPUSPY WORKDIR 'APP [ARGS]'...   (GPUSPY_SHIM picks the shim under test;
# an APP may be preceded by VAR=VALUE words, set for its runs)
set -uo pipefail
gpuspy=$1 work=$2
shift 2
mkdir -p "$work"
fail=0 n=0
normalize() {  # dump -> sorted "api frames..." lines, one per call
    "$gpuspy" dump "$1" | awk '
        $4 == "StackDef" { id = substr($5, 4); f = ""; for (i = 7; i <= NF; ++i) f = f " " $i; frames[$2 ":" id] = f; next }
        $4 == "Call" { s = ""; for (i = 1; i <= NF; ++i) if ($i ~ /^stack=/) s = substr($i, 7);
                       print $6, (s == "0" ? " -" : frames[$2 ":" s]) }' | sort
}
for spec in "$@"; do
    read -ra words <<< "$spec"
    vars=()
    while [[ ${words[0]} == *=* ]]; do vars+=("${words[0]}"); words=("${words[@]:1}"); done
    name=$(basename "${words[0]}")
    [[ ${#words[@]} -gt 1 ]] && name+=$(printf '_%s' "${words[@]:1}")
    name=${name//\//_}
    for cache in 0 1; do
        env "${vars[@]}" GPUSPY_STACK_CACHE=$cache setarch -R "$gpuspy" record --sim -o "$work/$name.$cache.gspy" -f -- "${words[@]}" \
            > /dev/null 2> "$work/$name.$cache.err" || { echo "FAIL $name: record (cache=$cache) failed"; fail=1; continue 2; }
        normalize "$work/$name.$cache.gspy" > "$work/$name.$cache.calls"
    done
    n=$((n + 1))
    calls=$(wc -l < "$work/$name.1.calls")
    if ! cmp -s "$work/$name.0.calls" "$work/$name.1.calls"; then
        echo "FAIL $name: stacks differ with the cache on ($calls calls)"
        diff "$work/$name.0.calls" "$work/$name.1.calls" | head -5
        fail=1
    elif [[ $calls -eq 0 ]]; then
        echo "FAIL $name: no calls recorded"
        fail=1
    else
        echo "ok   $name: $calls calls, the same stacks"
    fi
done
echo "stack_cache_apps: $n programs compared"
exit $fail
