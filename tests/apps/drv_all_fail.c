/* drv_all_fail: a program whose every CUDA call fails, as one built against an older toolkit does when it
 * binds a new driver's entry points with their old signatures (numba 0.56 calls CUDA 13's
 * cuCtxSynchronize_v2, which takes a context, with none): it never makes a context current, so each call
 * answers CUDA_ERROR_INVALID_CONTEXT, and it gives up with exit status 1 after its last one. The report
 * must name the first failing call, its error and its site rather than look empty. */
#include <cuda.h>
#include <stdio.h>

#define kAttempts 3 /* allocations tried before giving up */

static CUresult tryAllocate(CUdeviceptr* p) { return cuMemAlloc(p, 1 << 20); }

int main(void)
{
    if (cuInit(0) != CUDA_SUCCESS) return 2;
    CUdeviceptr p = 0;
    CUresult rc = CUDA_SUCCESS;
    for (int i = 0; i < kAttempts; ++i) rc = tryAllocate(&p);  /* no current context: each fails */
    const CUresult sync = cuCtxSynchronize();
    const char* name = "?";
    cuGetErrorName(rc, &name);
    printf("cuMemAlloc: %s (%d); cuCtxSynchronize: %d\n", name, (int)rc, (int)sync);
    return rc == CUDA_SUCCESS ? 0 : 1;
}
