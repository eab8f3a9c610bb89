/* tests/attach/drv_server.c: a long-running server on the driver API, linked -lcuda (its driver pointers
 * live in its GOT: lazily bound, or RELRO when linked -z now), for gpuspy attach's tests; protocol in
 * server_loop.h. One iteration: one cuMemsetD8 and a context synchronize. */
#include <cuda.h>

#include "server_loop.h"

static CUcontext g_ctx;
static CUdeviceptr g_buf;

static int server_init(void)
{
    CUdevice dev;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return 1;
    if (cuDevicePrimaryCtxRetain(&g_ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS) return 1;
    return cuMemAlloc(&g_buf, 4096) == CUDA_SUCCESS ? 0 : 1;
}

static int server_thread_init(void) { return cuCtxSetCurrent(g_ctx) == CUDA_SUCCESS ? 0 : 1; }

static int server_iteration(void)
{
    if (cuMemsetD8(g_buf, 1, 4096) != CUDA_SUCCESS) return 1;
    return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 1;
}

int main(int argc, char** argv) { return server_main(argc, argv); }
