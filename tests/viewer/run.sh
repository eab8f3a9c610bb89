#!/usr/bin/env bash
# tests/viewer/run.sh: the steps of the viewer tests (see CMakeLists.txt).
#   run.sh capture APP   record APP on the simulated GPU into $VIEWER_WORK/hostile.gspy (and, if built, the demo
#                        and timeline_loops gpu_bound: launch-heavy, most of its kernels untimed and placed
#                        on the device timeline by inference)
#   run.sh perfetto      export each capture with --format perfetto and check its structure (node)
#   run.sh pprof         export each capture with --format pprof, decode and check it (python3), read it with
#                        go tool pprof (Debian's golang-go, installed on first run)
#   run.sh lanes         the timeline's levels of detail (viewer/lanes.js) on made-up lanes (node)
#   run.sh diff          the diff page's tables (viewer/diff.js) from a made-up diff document (node)
#   run.sh browser       gpuspy view + report of the capture, then browser_test.cjs in headless chromium
# Environment: GPUSPY (the command), GPUSPY_SIMCUDA_DIR, VIEWER_WORK (a folder in the build tree),
# VIEWER_TESTS (this folder), GPUSPY_APPS_DIR (bin/apps of the build).
set -euo pipefail
step=$1
work=$VIEWER_WORK
mkdir -p "$work"

need_root_install() {  # need_root_install PACKAGE...: apt-get install as root, or say why not
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
        echo "viewer test: SKIPPED: $* missing and this is not root with apt-get to install it" >&2
        echo "viewer test: SKIPPED: install it (apt-get install $*) and run again" >&2
        exit 77
    fi
    echo "viewer test: installing $* (apt-get)" >&2
    apt-get update -qq >/dev/null || true
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
        echo "viewer test: SKIPPED: apt-get install $* failed (no network?)" >&2
        exit 77
    fi
}

case $step in
capture)
    app=$2
    "$GPUSPY" record --sim -o "$work/hostile.gspy" -f -- "$app" >"$work/hostile.record.txt"
    if [[ -x $GPUSPY_APPS_DIR/demo_infer ]]; then
        "$GPUSPY" record --sim -o "$work/demo.gspy" -f -- "$GPUSPY_APPS_DIR/demo_infer" >"$work/demo.record.txt"
    else
        rm -f "$work/demo.gspy"
    fi
    # A test program recorded as OUT with its simulated settings from tests/apps/sim_env.txt (the one list of
    # them), when it is built: timeline_loops (the device timeline's kernel times) and pool_memory (the
    # memory row's held line; its SIMCUDA_FAIL).
    record_app() {
        local out=$1 name=$2 binary=$GPUSPY_APPS_DIR/$3
        shift 3
        rm -f "$work/$out.gspy"
        [[ -x $binary ]] || return 0
        local vars
        read -r -a vars < <(awk -v n="$name" '$1 == n { $1 = ""; print }' "$VIEWER_TESTS/../apps/sim_env.txt")
        env "${vars[@]}" "$GPUSPY" record --sim -o "$work/$out.gspy" -f -- "$binary" "$@" >"$work/$out.record.txt"
    }
    record_app loops timeline_loops timeline_loops.static gpu_bound
    record_app pools pool_memory pool_memory.static keep
    echo "viewer test: recorded $(ls "$work"/*.gspy | tr '\n' ' ')"
    ;;
perfetto)
    command -v node >/dev/null || need_root_install nodejs
    for cap in "$work"/hostile.gspy "$work"/demo.gspy "$work"/loops.gspy "$work"/pools.gspy; do
        [[ -f $cap ]] || continue
        base=${cap%.gspy}
        "$GPUSPY" export "$cap" --format perfetto -o "$base.trace.json" -f
        # Each step its own report file: the steps run at once under ctest -j.
        "$GPUSPY" report "$cap" --format json >"$base.perfetto-report.json"
        node "$VIEWER_TESTS/check_perfetto.cjs" "$base.trace.json" "$base.perfetto-report.json"
    done
    ;;
pprof)
    command -v python3 >/dev/null || need_root_install python3
    [[ -x /usr/bin/go ]] || need_root_install golang-go
    export HOME=$work/gohome GOCACHE=$work/gocache
    mkdir -p "$HOME"
    for cap in "$work"/hostile.gspy "$work"/demo.gspy "$work"/loops.gspy "$work"/pools.gspy; do
        [[ -f $cap ]] || continue
        base=${cap%.gspy}
        "$GPUSPY" export "$cap" --format pprof -o "$base.pb.gz" -f
        "$GPUSPY" report "$cap" --format json >"$base.pprof-report.json"
        echo "viewer test: $base.pb.gz"
        python3 "$VIEWER_TESTS/check_pprof.py" "$base.pb.gz" "$base.pprof-report.json"
        # What a user runs: go tool pprof reads it, for every sample type.
        for index in calls cuda_host blocked gpu; do
            out=$(/usr/bin/go tool pprof -top -sample_index=$index "$base.pb.gz" 2>&1) || { echo "$out" >&2; exit 1; }
            grep -q "^Type: $index\$" <<<"$out" || { echo "viewer test: FAIL: go tool pprof -top -sample_index=$index: $out" >&2; exit 1; }
        done
        echo "  ok   go tool pprof -top reads it (calls, cuda_host, blocked, gpu)"
    done
    ;;
lanes)
    command -v node >/dev/null || need_root_install nodejs
    node "$VIEWER_TESTS/lanes_test.cjs"
    ;;
diff)
    command -v node >/dev/null || need_root_install nodejs
    node "$VIEWER_TESTS/diff_test.cjs"
    ;;
browser)
    [[ -x /usr/bin/chromium ]] || need_root_install chromium
    command -v node >/dev/null && command -v npm >/dev/null || need_root_install nodejs npm
    modules=$work/node
    if [[ ! -f $modules/node_modules/playwright-core/package.json ]]; then
        echo "viewer test: installing playwright-core (npm) into $modules" >&2
        mkdir -p "$modules"
        if ! npm install --prefix "$modules" --no-save --no-audit --no-fund --loglevel=error playwright-core@1 >&2; then
            echo "viewer test: SKIPPED: npm install playwright-core failed (no network?)" >&2
            exit 77
        fi
    fi
    "$GPUSPY" view "$work/hostile.gspy" -o "$work/hostile.html" -f
    "$GPUSPY" report "$work/hostile.gspy" --format json >"$work/hostile.report.json"
    args=("$work/hostile.html" "$work/hostile.report.json" "$work/hostile.png")
    if [[ -f $work/demo.gspy ]]; then
        "$GPUSPY" view "$work/demo.gspy" -o "$work/demo.html" -f
        "$GPUSPY" report "$work/demo.gspy" --format json >"$work/demo.report.json"
        args+=("$work/demo.html" "$work/demo.report.json" "$work/demo.png")
    fi
    for extra in loops pools; do
        [[ -f $work/$extra.gspy ]] || continue
        "$GPUSPY" view "$work/$extra.gspy" -o "$work/$extra.html" -f
        "$GPUSPY" report "$work/$extra.gspy" --format json >"$work/$extra.report.json"
        args+=("$work/$extra.html" "$work/$extra.report.json" "$work/$extra.png")
    done
    PLAYWRIGHT_CORE=$modules/node_modules/playwright-core node "$VIEWER_TESTS/browser_test.cjs" "${args[@]}"
    ;;
*)
    echo "usage: run.sh capture APP | perfetto | lanes | diff | browser" >&2
    exit 2
    ;;
esac
