#!/usr/bin/env bash
# Builds gpuspy in Release with its third-party libraries linked in and writes the field kit,
# dist/gpuspy-<version>-linux-x86_64.tar.gz: unpack it anywhere on an x86-64 Linux machine with
# glibc 2.34 and GCC 11's libstdc++ or newer and run bin/gpuspy; nothing else needs installing there.
#
# Usage: scripts/package.sh              (build tree: build-package/, override with GPUSPY_PACKAGE_BUILD)
# Prints the tarball's path on stdout; the build's output goes to stderr.
#
# Layout of the tarball (bin/gpuspy finds its shim and the simulated driver relative to itself):
#   gpuspy-<version>/bin/gpuspy                        the collector and CLI (libdw, libelf, zstd, fmt inside)
#   gpuspy-<version>/lib/gpuspy/libgpuspy.so           the injected shim
#   gpuspy-<version>/lib/gpuspy/libunwind.so.8         the unwinder the shim dlopen()s (Debian's; its .a is not PIC)
#   gpuspy-<version>/lib/gpuspy/simcuda/libcuda.so.1   the simulated driver (`gpuspy record --sim`)
#   gpuspy-<version>/lib/gpuspy/libgpuspy_metrics.so   the `collect --metrics` plugin, which gpuspy dlopen()s
#                                                      only then, and next to it what it needs (RUNPATH $ORIGIN):
#                                                      Debian's prometheus-cpp core and pull, civetweb(-cpp), zlib
#   gpuspy-<version>/README.md  LICENSES/             this project's README, the bundled code's licences
#   gpuspy-<version>/scripts/gpu-check.sh (+ gpu_check/, tests/apps/*.cu, the drv_*.c gpu-check builds and sim_env.txt, tests/report/expect/)
#                                                      the real-GPU check, run where the tarball travels
set -euo pipefail
GPUSPY_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$GPUSPY_ROOT/scripts/deps.sh"
gpuspy_install_deps

build=${GPUSPY_PACKAGE_BUILD:-$GPUSPY_ROOT/build-package}
dist=$GPUSPY_ROOT/dist
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

start=$(date +%s)
cmake -S "$GPUSPY_ROOT" -B "$build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DGPUSPY_STATIC_DEPS=ON -DGPUSPY_SANITIZE= \
      -DGPUSPY_BUILD_APPS=OFF -DGPUSPY_BUILD_BENCH=OFF >/dev/null
# Only what ships: the CLI (its target is gpuspy_cli when the shim's is gpuspy), the shim, the driver,
# the metrics plugin.
targets=(gpuspy simcuda gpuspy_metrics)
if grep -qw gpuspy_cli <<<"$(cmake --build "$build" --target help)"; then targets+=(gpuspy_cli); fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >&2

version=$("$build/bin/gpuspy" --version | awk '{print $2}')
name=gpuspy-$version
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/lib/gpuspy/simcuda" "$root/LICENSES"

# Symbol tables stay (a crash report with names is worth the ~10%); there is no debug info in Release.
install -m 755 "$build/bin/gpuspy" "$root/bin/gpuspy"
install -m 755 "$build/lib/libgpuspy.so" "$root/lib/gpuspy/libgpuspy.so"
install -m 755 "$build/lib/simcuda/libcuda.so.1" "$root/lib/gpuspy/simcuda/libcuda.so.1"
# libunwind: the one library the shim cannot link statically (Debian's libunwind.a is not PIC).
# The shim looks for it next to itself first. Its own NEEDED is libc, ld-linux and liblzma.so.5,
# which every glibc distribution's base system has (dpkg and rpm depend on it).
unwind=$(readlink -f "$(gcc -print-file-name=libunwind.so.8)")
[ -f "$unwind" ] || unwind=$(readlink -f /usr/lib/x86_64-linux-gnu/libunwind.so.8)
install -m 644 "$unwind" "$root/lib/gpuspy/libunwind.so.8"
# The metrics plugin and the shared libraries it needs (Debian has no static prometheus-cpp): each
# library its NEEDED names beyond glibc and the C++ runtime, from where the loader finds it here.
install -m 755 "$build/lib/libgpuspy_metrics.so" "$root/lib/gpuspy/libgpuspy_metrics.so"
metrics_libs=(libprometheus-cpp-core.so.1.0 libprometheus-cpp-pull.so.1.0 libcivetweb.so.1 libcivetweb-cpp.so.1 libz.so.1)
needed=$(readelf -d -W "$build/lib/libgpuspy_metrics.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $needed; do
  case $lib in libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) continue ;; esac
  grep -qxF "$lib" <(printf '%s\n' "${metrics_libs[@]}") ||
    { echo "package.sh: the metrics plugin needs $lib, which this script does not bundle (nor its licence)" >&2; exit 1; }
done
for lib in "${metrics_libs[@]}"; do
  grep -qxF "$lib" <<<"$needed" ||
    { echo "package.sh: the metrics plugin does not name $lib in its NEEDED: the bundled copy would not be found" >&2; exit 1; }
  path=$(ldd "$build/lib/libgpuspy_metrics.so" | awk -v l="$lib" '$1 == l {print $3}')
  [ -f "$path" ] || { echo "package.sh: cannot find $lib for the metrics plugin" >&2; exit 1; }
  install -m 644 "$(readlink -f "$path")" "$root/lib/gpuspy/$lib"
done
install -m 644 "$GPUSPY_ROOT/README.md" "$root/README.md"
# The real-GPU check travels with the kit (GPU machines often have nvcc but no package registry):
# its script, the test programs' sources it builds with nvcc, their simulated settings (sim_env.txt,
# as their tests run them), and the findings they must produce.
mkdir -p "$root/scripts/gpu_check" "$root/tests/apps" "$root/tests/report/expect"
install -m 755 "$GPUSPY_ROOT/scripts/gpu-check.sh" "$root/scripts/gpu-check.sh"
install -m 644 "$GPUSPY_ROOT"/scripts/gpu_check/* "$root/scripts/gpu_check/"
install -m 644 "$GPUSPY_ROOT"/tests/apps/*.cu "$GPUSPY_ROOT/tests/apps/app_common.h" "$GPUSPY_ROOT/tests/apps/sim_env.txt" \
  "$GPUSPY_ROOT"/tests/apps/drv_{arrays,memops,green,batches}.c "$GPUSPY_ROOT/tests/apps/drv_arrays_body.h" "$GPUSPY_ROOT/tests/apps/drv_check.h" "$root/tests/apps/"
install -m 644 "$GPUSPY_ROOT"/tests/report/expect/*.txt "$root/tests/report/expect/"

# Licences of what is inside, from the Debian packages the code came from (file: package's copyright).
licence() {  # licence NAME DEBIAN-PACKAGE WHAT
  install -m 644 "/usr/share/doc/$2/copyright" "$root/LICENSES/$1.copyright"
  printf '%-22s %-26s %s\n' "$1" "$2" "$3" >>"$root/LICENSES/README"
}
printf 'Third-party code in this tarball, and the Debian package whose copyright file is next to this one.\n\n' \
  >"$root/LICENSES/README"
licence libunwind libunwind8 "lib/gpuspy/libunwind.so.8, as shipped by Debian (MIT)"
licence fmt libfmt-dev "bin/gpuspy, header-only (MIT)"
licence nlohmann-json nlohmann-json3-dev "bin/gpuspy, header-only (MIT)"
licence elfutils libdw1 "bin/gpuspy, libdw and libelf linked statically (LGPL-3+ or GPL-2+)"
licence zstd libzstd1 "bin/gpuspy, linked statically (BSD-3-Clause or GPL-2)"
licence zlib zlib1g "bin/gpuspy, linked statically (Zlib)"
licence xz liblzma5 "bin/gpuspy, liblzma linked statically (public domain)"
licence bzip2 libbz2-1.0 "bin/gpuspy, linked statically (BSD-style)"
licence prometheus-cpp libprometheus-cpp-pull1.0 "lib/gpuspy/libprometheus-cpp-{core,pull}.so.1.0, as shipped by Debian (MIT)"
licence civetweb libcivetweb1 "lib/gpuspy/libcivetweb{,-cpp}.so.1, as shipped by Debian (MIT)"
licence zlib-shared zlib1g "lib/gpuspy/libz.so.1, as shipped by Debian (Zlib)"
licence concurrentqueue libconcurrentqueue-dev "lib/gpuspy/libgpuspy.so, header-only (BSD-2-Clause or BSL-1.0)"
cat >>"$root/LICENSES/README" <<'EOF'

elfutils is LGPL: its source is at https://sourceware.org/elfutils/ (Debian package elfutils 0.188),
and bin/gpuspy can be relinked against another libdw from gpuspy's own source (scripts/package.sh).
EOF

mkdir -p "$dist"
tarball=$dist/$name-linux-x86_64.tar.gz
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$tarball.tmp" "$name"
mv "$tarball.tmp" "$tarball"
echo "gpuspy: packaged in $(($(date +%s) - start)) s, $(du -k "$tarball" | cut -f1) KiB" >&2
echo "$tarball"
