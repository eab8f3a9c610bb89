#!/usr/bin/env bash
# Installs what is missing, builds what the demo runs (the gpuspy command, the shim, the simulated
# driver and the demo program: scripts/test.sh builds everything else), and profiles the demo inference
# program on the simulated GPU (no GPU needed), ending in the report.
set -euo pipefail
GPUSPY_ROOT=$(cd "$(dirname "$0")/.." && pwd)
unset CUDA_VISIBLE_DEVICES  # the simulated GPU reads it as the real driver does: the demo uses its devices as they are
source "$GPUSPY_ROOT/scripts/deps.sh"
gpuspy_install_deps

cd "$GPUSPY_ROOT"
# Its own tree, build-demo/, with only those targets and a lighter collector (GPUSPY_QUICK_COLLECTOR,
# collector/CMakeLists.txt); scripts/test.sh builds everything in build/.
GPUSPY_TARGETS="gpuspy gpuspy_cli simcuda gpuspy_demo" gpuspy_build build-demo -DGPUSPY_QUICK_COLLECTOR=ON
# The demo's layers are tiny kernels, as in a small-batch inference server: give them the short
# GPU times such kernels have on a real GPU (the simulated driver's default is 5 us), as its tests do.
sim_ns=$(awk '$1 == "demo_infer" { for (i = 2; i <= NF; i++) if (sub(/^SIMCUDA_KERNEL_NS=/, "", $i)) print $i }' \
  tests/apps/sim_env.txt)
export SIMCUDA_KERNEL_NS="${SIMCUDA_KERNEL_NS:-$sim_ns}"
exec build-demo/bin/gpuspy record --sim -o build-demo/demo.gspy -f -- build-demo/bin/apps/demo_infer
