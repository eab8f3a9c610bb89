// tests/attach/cudart_server.cu: a long-running server on NVIDIA's cudart (built static and shared) for
// gpuspy attach's tests; protocol in server_loop.h. One iteration: a scratch buffer allocated, one kernel
// launch, a device synchronize and the buffer freed, so the capture's launches, allocations and frees in a
// window equal the server's iterations in it (the counter, allocated at init, stays to the exit).
#include <cuda_runtime.h>

#include "server_loop.h"

__global__ void bump(int* counter)
{
    if (threadIdx.x == 0) atomicAdd(counter, 1);
}

static int* g_counter = nullptr;

static int server_init(void)
{
    return cudaMalloc(&g_counter, sizeof(int)) == cudaSuccess ? 0 : 1;
}

static int server_thread_init(void) { return 0; }

static int server_iteration(void)
{
    int* scratch = nullptr;
    if (cudaMalloc(&scratch, 4096) != cudaSuccess) return 1;
    bump<<<1, 32>>>(g_counter);
    if (cudaGetLastError() != cudaSuccess) return 1;
    const bool ok = cudaDeviceSynchronize() == cudaSuccess;
    return cudaFree(scratch) == cudaSuccess && ok ? 0 : 1;
}

int main(int argc, char** argv) { return server_main(argc, argv); }
