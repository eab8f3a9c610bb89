#!/usr/bin/env bash
# tests/collector/record_report_same.sh: the report `gpuspy record` prints is, byte for byte, what
# `gpuspy report` prints of the capture it wrote (record reads its capture back through the same
# streaming path). CMD's own output comes first on record's stdout; the report is what follows it.
# usage: record_report_same.sh GPUSPY FORMAT [RECORD_OPTION...] -- CMD [ARGS...]
set -euo pipefail
cli=$1 format=$2
shift 2
opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$cli" record "${opts[@]+"${opts[@]}"}" --format "$format" -o "$dir/c.gspy" -- "$@" >"$dir/record.out" 2>"$dir/record.err" ||
    { echo "record failed ($?)"; cat "$dir/record.err"; exit 1; }
"$cli" report --format "$format" "$dir/c.gspy" >"$dir/report.out" 2>"$dir/report.err" ||
    { echo "report failed ($?)"; cat "$dir/report.err"; exit 1; }
size=$(stat -c %s "$dir/report.out")
[ "$size" -gt 200 ] || { echo "a report of $size bytes:"; cat "$dir/report.out"; exit 1; }
case $format in
    json) grep -q '"schema": *"gpuspy.report/1"' "$dir/report.out" || { echo "not the JSON report"; exit 1; } ;;
    text) grep -q 'CUDA API' "$dir/report.out" || { echo "not the text report"; exit 1; } ;;
esac
if ! tail -c "$size" "$dir/record.out" | cmp -s - "$dir/report.out"; then
    echo "record's report differs from report's:"
    diff <(tail -c "$size" "$dir/record.out") "$dir/report.out" | head -40
    exit 1
fi
echo "record and report printed the same $format report ($size bytes)"
