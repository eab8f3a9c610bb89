#!/usr/bin/env bash
# scripts/gpu-check.sh: gpuspy on a real NVIDIA GPU, in one run of a few minutes (the machine needs the
# NVIDIA driver, nvcc, and PyTorch with CUDA for step 3; scripts/test.sh runs it with --sim from the
# unpacked release tarball).
#
#   1. builds the tests/apps programs with nvcc (static cudart + legacy default stream, shared cudart +
#      per-thread default stream; the driver-API ones as C against libcuda), runs each plainly, under `gpuspy record` on the real driver and under
#      `gpuspy record --sim`, and requires: the same exit status and stdout, and the same facts in both
#      reports (transfer counts and bytes per direction x memory x mode, kernel counts by name, launch
#      and sync counts); the findings that tests/report/expect says the program must (not) produce. The
#      simulated runs are the ones tests/report checks against ground truth, so agreement is the check:
#      each gets the settings tests/apps/sim_env.txt gives its program, as in tests/report;
#   2. span_probe: kernels of known duration (timed on the GPU's own clock) launched on an idle and on a
#      busy stream; gpuspy's median GPU time per kernel against that truth;
#   3. a PyTorch inference loop (pageable and pinned inputs, non_blocking copies, a synchronize per step)
#      bare, under gpuspy and under torch.profiler: kernel and copy counts and bytes must agree, and the
#      loop's wall-time overhead of each profiler against the bare loop is printed;
#   4. prints one table and writes everything under the results folder.
# Any mismatch is a FAIL and makes the exit status 1; nothing is skipped silently.
#
# Usage: scripts/gpu-check.sh [--gpuspy DIR] [--out DIR] [--sim] [--no-torch]
#   --gpuspy DIR  a folder with bin/gpuspy (an unpacked release tarball, or a build tree); default:
#                 the tarball this script came in, else the newest dist/gpuspy-*.tar.gz unpacked into
#                 the results folder, else build/
#   --out DIR     results folder (default gpu-check-YYYYmmdd-HHMMSS)
#   --sim         self-test without a GPU: the "real" side runs on the simulated driver too, with
#                 the program's settings (two_devices then runs on two simulated devices)
#   --no-torch    leave out step 3 (reported as not run, and the status is 1 unless --sim)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
here="$root/scripts/gpu_check"
home="" out="" sim=0 torch=1
while [[ $# -gt 0 ]]; do
    case $1 in
    --gpuspy) home=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sim) sim=1; shift ;;
    --no-torch) torch=0; shift ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
out=${out:-$PWD/gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
log="$out/results.txt"
: > "$log"
say() { echo "$*" | tee -a "$log"; }

if [[ -z $home && -x $root/bin/gpuspy ]]; then
    home=$root   # run from an unpacked release tarball, which carries this script
elif [[ -z $home ]]; then
    tarball=$(ls -t "$root"/dist/gpuspy-*.tar.gz 2>/dev/null | head -1)
    if [[ -n $tarball ]]; then
        mkdir -p "$out/gpuspy" && tar -xzf "$tarball" -C "$out/gpuspy" --strip-components=1 || exit 2
        home="$out/gpuspy"
    else
        home="$root/build"
    fi
fi
gpuspy="$home/bin/gpuspy"
[[ -x $gpuspy ]] || { echo "gpu-check: no gpuspy at $gpuspy (use --gpuspy DIR)" >&2; exit 2; }
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || { echo "gpu-check: nvcc not found" >&2; exit 2; }
cuda_lib=$(cd "$(dirname "$nvcc")/../lib64" 2>/dev/null && pwd)

# The simulated driver's settings per program (kernel times, device count), shared with tests/report.
sim_env_file="$root/tests/apps/sim_env.txt"
[[ -r $sim_env_file ]] || { echo "gpu-check: no $sim_env_file (the programs' simulated settings)" >&2; exit 2; }
sim_env() {  # app: its KEY=VALUE words, one a line
    awk -v app="$1" '$1 == app { for (i = 2; i <= NF; i++) print $i }' "$sim_env_file"
}

rows=()      # the final table: "check|result|detail"
failures=0
row() { rows+=("$1|$2|$3"); [[ $2 == FAIL ]] && failures=$((failures + 1)); return 0; }

say "gpu-check: $(date -u '+%Y-%m-%d %H:%M UTC'), gpuspy $("$gpuspy" --version 2>/dev/null | head -1) at $home"
real_flags=()
bare_env=()  # the plain runs' environment: none on the real driver; with --sim, the simulated one first
if [[ $sim -eq 1 ]]; then
    real_flags=(--sim)
    for d in "$home/lib/gpuspy/simcuda" "$home/lib/simcuda"; do
        [[ -e $d/libcuda.so.1 ]] && bare_env=("LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") && break
    done
    [[ ${#bare_env[@]} -gt 0 ]] || { echo "gpu-check: --sim: no simulated driver under $home/lib" >&2; exit 2; }
    arch=sm_90
    gpus=${SIMCUDA_DEVICES:-1}
    say "gpu-check: --sim: the real side runs on the simulated driver (self-test of this script)"
else
    if ! nvidia-smi -L > "$out/nvidia-smi.txt" 2>&1; then
        cat "$out/nvidia-smi.txt" >&2
        echo "gpu-check: nvidia-smi failed: no usable NVIDIA GPU (use --sim to test this script without one)" >&2
        exit 1
    fi
    nvidia-smi >> "$out/nvidia-smi.txt" 2>&1
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
    arch=sm_$cap
    gpus=$(nvidia-smi -L | grep -c '^GPU')
    say "gpu-check: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $gpus GPU(s), $arch"
fi
say "gpu-check: nvcc $("$nvcc" --version | grep -o 'release [0-9.]*')"

# ---- 1. the tests/apps programs -------------------------------------------------------------------
apps_src="$root/tests/apps"
apps_dir="$out/apps"
mkdir -p "$apps_dir"
apps=(pageable_sync_copies pinned_async_overlap tiny_kernels sync_every_launch alloc_free_loop
      multithread_streams graph_replay graph_copies graph_nodes graph_node_api memset_2d array_copies fork_child
      exec_child demo_infer slow_kernel two_devices)
# Driver-API programs (plain C, no kernel image): one variant, "drv", linked with the driver's libcuda.
drv_apps=(drv_arrays drv_memops drv_green drv_batches)
build_one() {  # app variant
    local app=$1 variant=$2 flags=()
    if [[ $variant == drv ]]; then
        "$nvcc" -O2 -g -Xcompiler -fno-omit-frame-pointer "$apps_src/$app.c" -L"$cuda_lib/stubs" -lcuda \
            -o "$apps_dir/$app.$variant" > "$apps_dir/$app.$variant.build.log" 2>&1
        return
    fi
    [[ $variant == *ptds ]] && flags+=(--default-stream per-thread)
    "$nvcc" -arch="$arch" -O2 -g -Xcompiler -fno-omit-frame-pointer "${flags[@]}" -cudart "${variant%_ptds}" \
        -Xlinker -rpath -Xlinker "$cuda_lib" "$apps_src/$app.cu" -o "$apps_dir/$app.$variant" \
        > "$apps_dir/$app.$variant.build.log" 2>&1
}
export -f build_one
export nvcc arch cuda_lib apps_src apps_dir
say "gpu-check: building ${#apps[@]} programs x 2 variants and ${#drv_apps[@]} driver-API programs with nvcc -arch=$arch"
{
    for app in "${apps[@]}"; do echo "$app static"; echo "$app shared_ptds"; done
    for app in "${drv_apps[@]}"; do echo "$app drv"; done
} | xargs -P "$(nproc)" -L 1 bash -c 'build_one $0 $1'
"$nvcc" -arch="$arch" -O2 -g "$here/span_probe.cu" -o "$apps_dir/span_probe" > "$apps_dir/span_probe.build.log" 2>&1

check_app() {  # app variant
    local app=$1 variant=$2 exe="$apps_dir/$1.$2" w="$out/runs/$1.$2" rc_bare rc_real rc_sim
    local -a sim_vars real_vars=()
    mapfile -t sim_vars < <(sim_env "$app")
    [[ $sim -eq 1 ]] && real_vars=("${sim_vars[@]}")
    mkdir -p "$w"
    if [[ ! -x $exe ]]; then
        row "$app.$variant" FAIL "nvcc failed: $(tail -1 "$apps_dir/$app.$variant.build.log")"; return
    fi
    printf '%s\n' "${sim_vars[@]}" > "$w/sim_env.txt"
    env "${bare_env[@]}" "${real_vars[@]}" "$exe" > "$w/bare.out" 2> "$w/bare.err"; rc_bare=$?
    env "${real_vars[@]}" "$gpuspy" record "${real_flags[@]}" -o "$w/real.gspy" -f -- "$exe" \
        > "$w/real.out" 2> "$w/real.err"; rc_real=$?
    env "${sim_vars[@]}" "$gpuspy" record --sim -o "$w/sim.gspy" -f -- "$exe" > "$w/sim.out" 2> "$w/sim.err"; rc_sim=$?
    if [[ $rc_bare -ne 0 ]]; then
        row "$app.$variant" FAIL "exits $rc_bare without gpuspy: $(tail -1 "$w/bare.err")"; return
    fi
    if [[ $rc_real -ne $rc_bare || $rc_sim -ne $rc_bare ]]; then
        row "$app.$variant" FAIL "exit status $rc_bare bare, $rc_real under gpuspy, $rc_sim simulated: $(tail -1 "$w/real.err")"; return
    fi
    local n; n=$(stat -c %s "$w/bare.out")
    if ! cmp -s -n "$n" "$w/bare.out" "$w/real.out"; then
        row "$app.$variant" FAIL "stdout under gpuspy differs from the bare run"; return
    fi
    if ! "$gpuspy" report "$w/real.gspy" --format json > "$w/real.json" 2> "$w/real.report.err" ||
       ! "$gpuspy" report "$w/sim.gspy" --format json > "$w/sim.json" 2> "$w/sim.report.err"; then
        row "$app.$variant" FAIL "gpuspy report failed: $(cat "$w"/*.report.err | head -1)"; return
    fi
    "$gpuspy" dump "$w/real.gspy" > "$w/real.dump.txt" 2>&1
    if python3 "$here/compare_reports.py" "$w/real.json" "$w/sim.json" "$app.$variant" \
        "$root"/tests/report/expect/"$app".*txt > "$w/compare.txt" 2>&1; then
        row "$app.$variant" ok "$(grep -c '  ok ' "$w/compare.txt") fact groups equal; $(grep ' info ' "$w/compare.txt" | sed 's/.*: real //')"
    else
        row "$app.$variant" FAIL "$(grep -m1 FAIL "$w/compare.txt" | sed 's/^ *FAIL //' | cut -c1-160)"
    fi
    cat "$w/compare.txt" >> "$log"
}
for app in "${apps[@]}"; do
    # With --sim the program's settings say how many devices the simulated machine has.
    devices=$gpus
    [[ $sim -eq 1 ]] && devices=$(sim_env "$app" | sed -n 's/^SIMCUDA_DEVICES=//p' | grep . || echo "$gpus")
    if [[ $app == two_devices && $devices -lt 2 ]]; then
        row "$app" "not run" "needs 2 GPUs, this machine has $devices"
        continue
    fi
    for variant in static shared_ptds; do
        check_app "$app" "$variant"
    done
done
for app in "${drv_apps[@]}"; do
    check_app "$app" drv
done

# ---- 2. GPU span accuracy -------------------------------------------------------------------------
w="$out/runs/span_probe"
mkdir -p "$w"
if [[ ! -x $apps_dir/span_probe ]]; then
    row span_probe FAIL "nvcc failed: $(tail -1 "$apps_dir/span_probe.build.log")"
elif [[ $sim -eq 1 ]]; then
    row span_probe "not run" "--sim: the simulated driver has no %globaltimer"
else
    "$apps_dir/span_probe" > "$w/bare.jsonl" 2> "$w/bare.err"
    "$gpuspy" record -o "$w/probe.gspy" -f -- "$apps_dir/span_probe" > "$w/real.out" 2> "$w/real.err"
    "$gpuspy" report "$w/probe.gspy" --format json > "$w/real.json" 2>> "$w/real.err"
    if python3 "$here/span_compare.py" "$w/bare.jsonl" "$w/real.json" > "$w/compare.txt" 2>&1; then
        row span_probe ok "$(tail -1 "$w/compare.txt")"
    else
        row span_probe FAIL "$(grep -m1 FAIL "$w/compare.txt" | cut -c1-160)"
    fi
    cat "$w/compare.txt" >> "$log"
fi

# ---- 3. PyTorch -----------------------------------------------------------------------------------
w="$out/runs/torch"
mkdir -p "$w"
if [[ $torch -eq 0 ]]; then
    row pytorch "not run" "--no-torch"
    [[ $sim -eq 1 ]] || failures=$((failures + 1))
elif ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' > "$w/probe.err" 2>&1; then
    if [[ $sim -eq 1 ]]; then
        row pytorch "not run" "--sim: no PyTorch with CUDA here"
    else
        row pytorch FAIL "PyTorch with CUDA is not usable: $(tail -1 "$w/probe.err")"
    fi
else
    t=(python3 "$here/torch_loop.py" --steps "${TORCH_STEPS:-300}")
    PYTHONUNBUFFERED=1 "${t[@]}" --mode bare --out "$w/bare.json" > "$w/bare.out" 2>&1
    PYTHONUNBUFFERED=1 "$gpuspy" record "${real_flags[@]}" -o "$w/torch.gspy" -f -- "${t[@]}" --mode bare --out "$w/gpuspy.json" \
        > "$w/gpuspy.out" 2> "$w/gpuspy.err"
    PYTHONUNBUFFERED=1 "${t[@]}" --mode profiler --out "$w/profiler.json" > "$w/profiler.out" 2>&1
    PYTHONUNBUFFERED=1 "${t[@]}" --mode bare --out "$w/bare2.json" > "$w/bare2.out" 2>&1
    "$gpuspy" report "$w/torch.gspy" --format json > "$w/report.json" 2> "$w/report.err"
    if python3 "$here/torch_compare.py" "$w" > "$w/compare.txt" 2>&1; then
        row pytorch ok "$(tail -1 "$w/compare.txt")"
    else
        row pytorch FAIL "$(grep -m1 FAIL "$w/compare.txt" | cut -c1-160)"
    fi
    cat "$w/compare.txt" >> "$log"
fi

# ---- 4. the table ---------------------------------------------------------------------------------
{
    echo
    echo "| check | result | detail |"
    echo "|---|---|---|"
    for r in "${rows[@]}"; do IFS='|' read -r a b c <<< "$r"; echo "| $a | $b | $c |"; done
    echo
    echo "gpu-check: $failures failure(s); everything is in $out"
} | tee -a "$log" > "$out/summary.md"
cat "$out/summary.md"
[[ $failures -eq 0 ]]
