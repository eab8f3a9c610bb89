#!/usr/bin/env bash
# Installs what gpuspy needs to build and test, from Debian's packages, when it is missing.
# Sourced by demo.sh and test.sh; safe to run again (it only installs what is absent).
set -euo pipefail

GPUSPY_DEBS=(cmake g++ make pkg-config git libunwind-dev libfmt-dev libconcurrentqueue-dev libgtest-dev
             libbenchmark-dev libdw-dev libelf-dev nlohmann-json3-dev libzstd-dev zstd
             clang libclang-rt-14-dev python3
             zlib1g-dev liblzma-dev libbz2-dev  # these three: libdw.a's compressors (scripts/package.sh); zlib: pprof
             python3-numba  # report.numba_binding: the field case of a framework whose setup call fails (issue 28)
             prometheus-cpp-dev prometheus curl tmux)  # collect --metrics and its tests (promtool, a real
                                                       # Prometheus), gpuspy top's test

gpuspy_install_deps() {
  local missing=()
  for p in "${GPUSPY_DEBS[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "gpuspy: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "gpuspy: the CUDA toolkit is expected at /usr/local/cuda (nvcc, cuda.h, cudart)" >&2
    return 1
  fi
}

# Configures and builds one tree: gpuspy_build DIR [cmake args...]; with GPUSPY_TARGETS set (a list of
# target names), only those targets and what they need.
gpuspy_build() {
  local dir=$1; shift
  cmake -S "$GPUSPY_ROOT" -B "$dir" -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc "$@" >/dev/null
  local targets=()
  [ -z "${GPUSPY_TARGETS:-}" ] || targets=(--target $GPUSPY_TARGETS)
  cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
}
