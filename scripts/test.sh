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
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 300 -LE known-gap)
