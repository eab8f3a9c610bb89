#!/usr/bin/env bash
# tests/collector/memory_test.sh: the collector does not hold the records. `gpuspy collect` and then
# `gpuspy record` (which also prints the report) each take a synthetic stream of RECORDS records
# (synth_client.cpp); the peak resident set of each, for its whole life (wait4's ru_maxrss), must be at
# most 1/RATIO of what holding the decoded records would take (their bodies alone: the client counts
# them). Every call must have been written. Prints the numbers.
# usage: memory_test.sh GPUSPY SYNTH_CLIENT FAKE_SHIM RECORDS [RATIO]
set -euo pipefail
cli=$1 client=$2 shim=$3 records=$4 ratio=${5:-4}
dir=$(mktemp -d)
collector=
trap '[ -z "$collector" ] || kill -KILL "$(cat "$dir/collect.pid")" 2>/dev/null; rm -rf "$dir"' EXIT

# measured OUT PIDFILE CMD...: runs CMD, writes its pid to PIDFILE, then its peak RSS in KiB (with that
# of the children it reaped: the client, whose own stream buffer is 256 KiB) to OUT; CMD's status.
measured() {
    python3 -c '
import os, subprocess, sys
p = subprocess.Popen(sys.argv[3:])
open(sys.argv[2], "w").write("%d\n" % p.pid)
_, status, ru = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write("%d\n" % ru.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)' "$@"
}

# calls ERRFILE: the Call records gpuspy says it wrote ("gpuspy: wrote F: N process(es), M calls, ...").
calls() {
    sed -n 's/^gpuspy: wrote .*: [0-9]* process(es), \([0-9]*\) calls.*/\1/p' "$1"
}

fail=0
check() {  # WHAT PEAK_KIB HELD_BYTES
    local what=$1 peak=$2 held=$3
    echo "$what: $records records, holding them would take >= $((held >> 20)) MiB; peak RSS $((peak >> 10)) MiB"
    if [ $((peak * 1024 * ratio)) -gt "$held" ]; then
        echo "FAIL: $what's peak RSS is more than 1/$ratio of what holding the records would take"
        fail=1
    fi
}

# collect: a long-running collector, finished by SIGINT after the client is done.
measured "$dir/collect.rss" "$dir/collect.pid" "$cli" collect --socket "$dir/sock" -o "$dir/c.gspy" 2>"$dir/collect.err" &
collector=$!
for _ in $(seq 200); do [ -S "$dir/sock" ] && break; sleep 0.05; done
[ -S "$dir/sock" ] || { echo "the collector never listened"; cat "$dir/collect.err"; exit 1; }
"$client" "$records" "$dir/sock" >"$dir/client.out"
read -r _ sent _ sent_calls _ _ _ _ _ held <"$dir/client.out"
kill -INT "$(cat "$dir/collect.pid")"
wait $collector || { echo "collect failed"; cat "$dir/collect.err"; exit 1; }
collector=
check "gpuspy collect" "$(cat "$dir/collect.rss")" "$held"
got=$(calls "$dir/collect.err")
[ "${got:-0}" -eq "$sent_calls" ] || { echo "FAIL: collect wrote ${got:-no} calls, $sent_calls sent"; cat "$dir/collect.err"; fail=1; }

# record: the client is the command (the stand-in shim preloaded into it adds a small process); gpuspy
# writes the capture, then prints the report of it. The report holds a window of a process's latest calls
# for the replay, of the replay's budget (500,000 calls: about 230 MiB with its graphs, a constant whatever
# the capture's size); a budget of 50,000 (the test-only GPUSPY_TEST_REPLAY_CALL_BUDGET) keeps that constant
# small beside 5 M records, so that what this checks stays what grows with the records.
GPUSPY_TEST_REPLAY_CALL_BUDGET=50000 GPUSPY_SHIM=$shim measured "$dir/record.rss" "$dir/record.pid" \
    "$cli" record -f -o "$dir/r.gspy" -- "$client" "$records" >"$dir/record.out" 2>"$dir/record.err" ||
    { echo "record failed"; cat "$dir/record.err"; exit 1; }
read -r _ _ _ _ _ _ _ _ _ held <<<"$(grep '^records ' "$dir/record.out")"
grep -q "cuLaunchKernel" "$dir/record.out" || { echo "record printed no report:"; head -c 2000 "$dir/record.out"; fail=1; }
check "gpuspy record" "$(cat "$dir/record.rss")" "$held"
got=$(calls "$dir/record.err")  # and the stand-in shim's one call
[ "${got:-0}" -eq $((sent_calls + 1)) ] || { echo "FAIL: record wrote ${got:-no} calls, $sent_calls + 1 sent"; cat "$dir/record.err"; fail=1; }
echo "($sent records sent each time, $sent_calls of them calls)"
exit $fail
