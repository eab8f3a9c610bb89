#!/bin/bash
# tests/python/check_layout.sh CC SOURCE_DIR INCLUDE_DIR WORK: builds check_layout.c against one CPython's
# headers (INCLUDE_DIR, e.g. .../include/python3.12) and runs it: fails where shim/python_layouts.h's row
# for that version disagrees with the headers' offsetof.
set -euo pipefail
cc=$1 src=$2 inc=$3 work=$4
mkdir -p "$work"
"$cc" -std=c11 -I"$src" -I"$inc" -I"$inc/internal" "$src/tests/python/check_layout.c" -o "$work/check_layout"
"$work/check_layout"
echo "layout ok: $inc"
