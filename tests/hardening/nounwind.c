/* tests/hardening/nounwind.c: a frame without unwind information (built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables and frame pointers): libunwind finds no FDE for
 * it and falls back to the frame chain, validating each address it reads (unwind_pipe.c). */
#include <cuda.h>

__attribute__((noinline)) long launchWithoutUnwindInfo(CUfunction fn, CUdeviceptr buf, int n)
{
    long failed = 0;
    void* params[] = {&buf};
    for (int i = 0; i < n; ++i)
        if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    __asm__ volatile("" ::: "memory");  /* not a tail call: this frame stays on the stack */
    return failed;
}
