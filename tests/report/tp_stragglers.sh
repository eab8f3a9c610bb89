#!/usr/bin/env bash
# tests/report/tp_stragglers.sh: one process per GPU (issue 29), as tensor-parallel servers run. tp_launch starts 4
# nccl_tp processes (RANK/LOCAL_RANK/WORLD_SIZE set, the NCCL id passed from rank 0, ncclCommInitRank), each a
# work kernel then an all-reduce per layer; the simulated driver couples the ranks' NCCL kernels across the
# processes (SIMCUDA_NCCL_JOB) and traces each one's wait, one trace per process. `gpuspy record` follows the
# launcher's process tree into the 4 ranks. Rank 2 is late on the host (late: 100 ms of host work before each
# layer's launches, far above what a loaded host's scheduling moves a process by) or not (even). Checked against
# the traces: every collective of every rank counted with its bytes, each rank's wait for its peers, the
# straggler finding naming rank 2 by pid and rank with the others' lost time and its saving, against what
# removing the delay really saves (the span of late's collectives against even's); no straggler in even, and
# `gpuspy diff late even` calls the finding resolved. The traces' coupling itself is checked first.
# usage: tp_stragglers.sh GPUSPY TP_LAUNCH NCCL_TP WORKDIR
set -uo pipefail
gpuspy=$1 launch=$2 prog=$3 work=$4
rm -rf "$work" && mkdir -p "$work" || exit 2
# 4 layers per step: rank 2's lateness adds up per layer, while a loaded host's noise in even's span comes per
# step (each rank's sync and relaunch), so the saving stands well above it.
steps=4 layers=4
export SIMCUDA_DEVICES=4 NCCL_SOCKET_IFNAME=lo SIMCUDA_NCCL_RANKS=4 SIMCUDA_NCCL_JOB=auto
# A layer's work kernel (30 ms) is long against what scheduling moves a rank's process by on a loaded 2-core host
# (4 ranks and their NCCL threads: a few ms), so that even has no rank late by a fifth of a layer; late's 100 ms make the saving stand well above the
# few ms per step a loaded host adds to even's span.
export SIMCUDA_KERNEL_NS=layer_work=30000000,ncclDevKernel=300000
for mode in late even; do
    mkdir -p "$work/trace.$mode"
    SIMCUDA_TRACE="$work/trace.$mode/%p.jsonl" "$gpuspy" record --sim -f -o "$work/$mode.gspy" -- "$launch" 4 "$prog" $mode $steps $layers \
        > "$work/$mode.out" 2>&1 || { cat "$work/$mode.out"; exit 1; }
    "$gpuspy" report --format json "$work/$mode.gspy" > "$work/$mode.json" || exit 1
done
"$gpuspy" report --width 140 "$work/late.gspy" > "$work/late.txt" || exit 1
# The fix (even: rank 2 no longer late) resolves the finding.
"$gpuspy" diff --format json "$work/late.gspy" "$work/even.gspy" > "$work/diff.json" || exit 1
# One Kineto trace per rank (issue 29's exports): each process's file by the rank its launcher gave it.
"$gpuspy" export "$work/late.gspy" --format kineto -f -o "$work/late.kineto" > /dev/null || exit 1
python3 "$(dirname "$0")/tp_checks.py" "$work" "$steps" "$layers"
