#!/usr/bin/env bash
# Installs what is missing, builds gpuspy, and profiles the demo inference program on the
# simulated GPU (no GPU needed), ending in the report.
set -euo pipefail
GPUSPY_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$GPUSPY_ROOT/scripts/deps.sh"
gpuspy_install_deps

cd "$GPUSPY_ROOT"
gpuspy_build build
# The demo's layers are tiny kernels, as in a small-batch inference server: give them the short
# GPU times such kernels have on a real GPU (the simulated driver's default is 5 us), as its tests do.
sim_ns=$(awk '$1 == "demo_infer" { for (i = 2; i <= NF; i++) if (sub(/^SIMCUDA_KERNEL_NS=/, "", $i)) print $i }' \
  tests/apps/sim_env.txt)
export SIMCUDA_KERNEL_NS="${SIMCUDA_KERNEL_NS:-$sim_ns}"
exec build/bin/gpuspy record --sim -o build/demo.gspy -f -- build/bin/apps/demo_infer
