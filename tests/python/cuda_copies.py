# tests/python/cuda_copies.py: a Python program that drives CUDA through ctypes, as a new user's first
# try does: a synchronous copy from pageable memory inside to_device(), called from step(). The report
# must name to_device and its line, not libffi or the interpreter (issue 18).
# Usage: python3 cuda_copies.py MODE   (MODE: main, threads, threads_free, mp [spawn|fork], driver, callback,
#                                        native_thread LIBRARY, churn N, depths N, package)
import ctypes
import sys
import threading

ITERATIONS = 20
NBYTES = 1 << 20
HTOD = 1  # cudaMemcpyHostToDevice


def runtime():
    rt = ctypes.CDLL("libcudart.so.13")
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    rt.cudaFree.argtypes = [ctypes.c_void_p]
    return rt


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what} failed: {rc}")


def to_device(rt, dev, host):
    check(rt.cudaMemcpy(dev, host, NBYTES, HTOD), "cudaMemcpy")  # the pageable copy


def step(rt, dev, host):
    to_device(rt, dev, host)


def run_runtime(iterations):
    rt = runtime()
    dev = ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(dev), NBYTES), "cudaMalloc")
    host = ctypes.create_string_buffer(NBYTES)  # pageable: plain process memory
    for _ in range(iterations):
        step(rt, dev, host)
    check(rt.cudaFree(dev), "cudaFree")


def driver_to_device(cu, dev, host):
    check(cu.cuMemcpyHtoD_v2(dev, host, NBYTES), "cuMemcpyHtoD")  # the pageable copy (driver API)


def driver_step(cu, dev, host):
    driver_to_device(cu, dev, host)


def run_driver():
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    check(cu.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    dev = ctypes.c_uint64()
    check(cu.cuMemAlloc_v2(ctypes.byref(dev), NBYTES), "cuMemAlloc")
    host = ctypes.create_string_buffer(NBYTES)
    for _ in range(ITERATIONS):
        driver_step(cu, dev.value, host)
    check(cu.cuMemFree_v2(dev.value), "cuMemFree")


def callback_step(rt, dev, host):
    to_device(rt, dev, host)


def run_callback():
    # A C-extension-like path: native code (libc's qsort) calls back into Python, which calls CUDA.
    rt = runtime()
    dev = ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(dev), NBYTES), "cudaMalloc")
    host = ctypes.create_string_buffer(NBYTES)
    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def on_compare(a, b):
        callback_step(rt, dev, host)
        return 0

    libc = ctypes.CDLL(None)
    items = (ctypes.c_int * (ITERATIONS + 1))()
    libc.qsort(items, ITERATIONS + 1, ctypes.sizeof(ctypes.c_int), compare(on_compare))
    check(rt.cudaFree(dev), "cudaFree")


def run_native_thread(library):
    # A C extension's own thread copies (tests/python/native_thread.c): no Python frames to show.
    rt = runtime()
    dev = ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(dev), NBYTES), "cudaMalloc")
    host = ctypes.create_string_buffer(NBYTES)
    native = ctypes.CDLL(library)
    native.copy_on_native_thread.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_int]
    memcpy = ctypes.cast(rt.cudaMemcpy, ctypes.c_void_p)
    check(native.copy_on_native_thread(memcpy, dev, ctypes.addressof(host), NBYTES, ITERATIONS), "native copies")
    check(rt.cudaFree(dev), "cudaFree")


def run_churn(functions):
    # Code objects made and freed one after another (exec of generated source, as templating and
    # notebook cells do): a new one often lands at a freed one's address. Function i's call is on line
    # i + 2 of "churn.py"; a stale answer for a reused address would name another line.
    rt = runtime()
    rt.cudaStreamQuery.argtypes = [ctypes.c_void_p]
    for i in range(functions):
        source = "\n" * i + "def churned(rt):\n    return rt.cudaStreamQuery(None)\n"
        scope = {}
        exec(compile(source, "churn.py", "exec"), scope)
        check(scope["churned"](rt), "cudaStreamQuery")
        del scope


def query(rt):
    check(rt.cudaStreamQuery(None), "cudaStreamQuery")  # the query


def query_nested(rt, levels):
    # Each level calls the next through map(), from C: one more eval loop and a few interpreter frames
    # on the native stack, so the native depth to the outermost Python frame changes from call to call
    # (on 3.11+ the 3-level one passes a 24-frame capture: its outer Python frames are appended).
    if levels == 0:
        query(rt)
    else:
        list(map(lambda _: query_nested(rt, levels - 1), range(1)))


def run_depths(iterations):
    rt = runtime()
    rt.cudaStreamQuery.argtypes = [ctypes.c_void_p]
    for i in range(iterations):
        query_nested(rt, i % 4)


def package_step(buffer, host):
    buffer.upload(host)  # the package's copy, called from this line


def run_package():
    # Through a package installed where pip puts one (tests/python/site-packages/gpukit): its frames
    # stand between this line and cudaMemcpy, and the report names this line (issue 28).
    import os

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
    import gpukit

    buffer = gpukit.Buffer()
    host = ctypes.create_string_buffer(gpukit.NBYTES)
    for _ in range(ITERATIONS):
        package_step(buffer, host)
    buffer.free()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "main"
    if mode == "main":
        run_runtime(ITERATIONS)
    elif mode == "threads":
        # Taking turns: blocking copies from several threads at once overlap on the device, where the
        # report's timeline bounds (upper bounds for blocking copies) are wider than report_vs_trace
        # accepts; that is the timeline's, not this program's, subject. threads_free races them.
        turn = threading.Lock()

        def in_turn(iterations):
            with turn:
                run_runtime(iterations)

        workers = [threading.Thread(target=in_turn, args=(ITERATIONS // 4,)) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    elif mode == "threads_free":
        # 8 threads copying at once: the shim interns their Python frames concurrently.
        workers = [threading.Thread(target=run_runtime, args=(ITERATIONS * 2,)) for _ in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    elif mode == "mp":
        import multiprocessing

        ctx = multiprocessing.get_context(sys.argv[2] if len(sys.argv) > 2 else "spawn")
        worker = ctx.Process(target=run_runtime, args=(ITERATIONS,))
        worker.start()
        worker.join()
        if worker.exitcode != 0:
            raise SystemExit(f"worker exited with {worker.exitcode}")
    elif mode == "driver":
        run_driver()
    elif mode == "callback":
        run_callback()
    elif mode == "package":
        run_package()
    elif mode == "churn":
        run_churn(int(sys.argv[2]))
    elif mode == "depths":
        run_depths(int(sys.argv[2]))
    elif mode == "native_thread":
        run_native_thread(sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(f"{mode}: done")


if __name__ == "__main__":
    main()
