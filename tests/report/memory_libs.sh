#!/usr/bin/env bash
# tests/report/memory_libs.sh: GPU memory through NVIDIA's libraries (issue 33). nccl_allreduce on two
# simulated devices maps its buffers with the VMM API (cuMemCreate/cuMemMap, unmapped and released at
# the end, handles retained in between) and allocates pinned host memory; cublas_gemm's workspace is
# allocated inside cublasCreate. Every space must balance (as many releases as allocations, none of
# memory never seen, nothing left at the end), the peaks must hold what the libraries mapped, and the
# holders must be named by the library call the user made; the VMM address space NCCL reserves is counted
# apart (not memory), all of it given back.
# usage: memory_libs.sh GPUSPY LIBS_BIN_DIR WORKDIR
set -uo pipefail
gpuspy=$1 libs=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 2
SIMCUDA_DEVICES=2 NCCL_SOCKET_IFNAME=lo "$gpuspy" record --sim -f -o "$work/nccl.gspy" -- "$libs/nccl_allreduce" > "$work/nccl.out" 2>&1 ||
    { cat "$work/nccl.out"; exit 1; }
"$gpuspy" record --sim -f -o "$work/cublas.gspy" -- "$libs/cublas_gemm" > "$work/cublas.out" 2>&1 || { cat "$work/cublas.out"; exit 1; }
"$gpuspy" report --format json "$work/nccl.gspy" > "$work/nccl.json" && "$gpuspy" report --format json "$work/cublas.gspy" > "$work/cublas.json" || exit 1
python3 - "$work/nccl.json" "$work/cublas.json" <<'PY'
import json, sys
nccl, cublas = (json.load(open(p)) for p in sys.argv[1:3])
results = []  # (passed, what), printed at the end
check = lambda ok, what: results.append((bool(ok), what))
def api_count(r, name):
    return sum(a["count"] for a in r["apis"] if a["api"] == name and a["errors"] == 0)

rows = {(m["space"], m["device"]): m for m in nccl["memory"]}
maps, unmaps = api_count(nccl, "cuMemMap"), api_count(nccl, "cuMemUnmap")
check(maps > 0 and maps == unmaps, f"nccl: the capture holds cuMemMap {maps} and cuMemUnmap {unmaps} calls, as many of each")
for dev in (0, 1):
    m = rows.get(("device", dev))
    check(m is not None, f"nccl: a memory row for device {dev}")
    if not m:
        continue
    check(m["allocations"] == m["releases"] and m["unknown_releases"] == 0 and m["in_use_end_bytes"] == 0,
          f"nccl device {dev}: balanced: {m['allocations']} allocations, {m['releases']} releases, "
          f"{m['unknown_releases']} of memory never seen, {m['in_use_end_bytes']} bytes left")
    check(m["peak_bytes"] > 0 and sum(h["bytes"] for h in m["at_peak"]) == m["peak_bytes"],
          f"nccl device {dev}: the holders at the peak add up to it ({m['peak_bytes']} bytes)")
    check(all("nccl" in h["label"].lower() for h in m["at_peak"]),
          f"nccl device {dev}: every holder at the peak is named inside NCCL: " + "; ".join(h["label"] for h in m["at_peak"]))
    labels = [h["label"] for h in m["at_peak"]]
    check(len(labels) == len(set(labels)), f"nccl device {dev}: one holding per call site")
    reserves, frees = api_count(nccl, "cuMemAddressReserve"), api_count(nccl, "cuMemAddressFree")
    check(m["vmm_reserved_peak_bytes"] > 0 and m["vmm_reserved_end_bytes"] == 0 and reserves == frees,
          f"nccl device {dev}: VMM address space reserved at most {m['vmm_reserved_peak_bytes']} bytes, all given back "
          f"({reserves} cuMemAddressReserve, {frees} cuMemAddressFree)")
total_mapped = sum(m["allocated_bytes"] for m in nccl["memory"] if m["space"] == "device")
check(("device", -1) not in rows, "nccl: no memory row without a device")
pinned = rows.get(("pinned_host", -1))
check(pinned is not None and pinned["in_use_end_bytes"] == 0 and pinned["allocations"] == api_count(nccl, "cuMemHostAlloc"),
      "nccl: pinned host memory: one allocation per cuMemHostAlloc, all freed")
check(not [f for f in nccl["findings"] if f["rule"] in ("memory-leak", "allocation-failed")], "nccl: no leak, no failed allocation")

dev0 = [m for m in cublas["memory"] if m["space"] == "device" and m["device"] == 0]
check(len(dev0) == 1, "cublas: a memory row for device 0")
if dev0:
    top = dev0[0]["at_peak"][0] if dev0[0]["at_peak"] else {"label": "", "bytes": 0}
    check("cublasCreate" in top["label"] and "cublas_gemm.cu" in top["label"],
          f"cublas: the largest holder at the peak is the workspace, named by the user's line and cublasCreate: {top['label']}")
for ok, what in results:
    print(("ok   " if ok else "FAIL ") + what)
if not all(ok for ok, _ in results):
    sys.exit(f"memory_libs.sh: FAIL: {sum(not ok for ok, _ in results)} check(s) failed")
print("memory_libs.sh: ok")
PY
