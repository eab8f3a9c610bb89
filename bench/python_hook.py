# bench/python_hook.py: what a hooked CUDA call costs a Python program (issue 18): cuStreamQuery through
# ctypes, DEPTH Python frames deep, timed in batches in the thread's CPU time (thread_time_ns: on a shared machine, waiting for a core
# is not counted); prints the median CPU ns per call
# of the batches as one JSON line. python_hook.sh runs it without gpuspy, with native stacks only
# (GPUSPY_PYTHON=0) and with Python frames, so that the differences are the hook's and the Python
# frames' own costs: the ctypes call itself (about a microsecond) is in all three.
# Usage: python3 python_hook.py [CALLS_PER_BATCH] [BATCHES] [DEPTH]
import ctypes
import json
import statistics
import sys
import time


def main():
    per_batch = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    cu = ctypes.CDLL("libcuda.so.1")
    if cu.cuInit(0) != 0:
        raise SystemExit("cuInit failed")
    device = ctypes.c_int()
    ctx = ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(device), 0)
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device)
    cu.cuCtxSetCurrent(ctx)
    query = cu.cuStreamQuery
    query.argtypes = [ctypes.c_void_p]

    def loop(n):
        t0 = time.thread_time_ns()
        for _ in range(n):
            query(None)
        return time.thread_time_ns() - t0

    def nested(level, n):
        return loop(n) if level <= 1 else nested(level - 1, n)

    nested(depth, per_batch)  # warm up: every stack interned, the shim's tables touched
    per_call = sorted(nested(depth, per_batch) / per_batch for _ in range(batches))
    print(json.dumps({"depth": depth, "calls": per_batch * batches, "median_ns": round(statistics.median(per_call), 1),
                      "p10_ns": round(per_call[len(per_call) // 10], 1)}))


if __name__ == "__main__":
    main()
