#!/usr/bin/env bash
# Installs what is missing, builds gpuspy, and profiles the demo inference program on the
# simulated GPU (no GPU needed), ending in the report.
set -euo pipefail
GPUSPY_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$GPUSPY_ROOT/scripts/deps.sh"
gpuspy_install_deps

cd "$GPUSPY_ROOT"
gpuspy_build build
exec build/bin/gpuspy record --sim -o build/demo.gspy -f -- build/bin/apps/demo_infer
