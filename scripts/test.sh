#!/usr/bin/env bash
# Installs what is missing, builds gpuspy, and runs the whole test suite through ctest.
# Usage: scripts/test.sh            (the suite CI runs)
set -euo pipefail
GPUSPY_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$GPUSPY_ROOT/scripts/deps.sh"
# chromium: the viewer's browser test (tests/viewer) drives it headless.
gpuspy_install_deps chromium

cd "$GPUSPY_ROOT"
gpuspy_build build
# known-gap: checks that fail today for a documented, open reason (see tests/report/expect/*.launch_bound.txt);
# run them with `ctest -L known-gap`.
cd build
# Everything that does not time the simulated GPU against the host clock, in parallel.
ctest --output-on-failure -j "$(nproc)" --timeout 300 -LE 'known-gap|shim|report|fuzz'
# The shim and report tests compare GPU times measured with events to the simulated driver's ground
# truth: one at a time, so that no other test steals the CPU between a call and its event record.
ctest --output-on-failure -j 1 --timeout 300 -L 'shim|report' -LE known-gap
# The fuzzers saturate a core each for their time box: last, on their own.
ctest --output-on-failure -j 1 --timeout 600 -L fuzz
