// app_common.h: the error check shared by the nvcc test programs: any CUDA error ends the program with a
// clear message and exit status 1, so a test never passes on a half-run program.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        const cudaError_t ck_err_ = (call);                                                        \
        if (ck_err_ != cudaSuccess) {                                                              \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s, %d)\n", __FILE__, __LINE__, #call,     \
                         cudaGetErrorString(ck_err_), cudaGetErrorName(ck_err_), (int)ck_err_);    \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// A launch reports configuration errors only through cudaGetLastError.
#define CK_LAUNCH() CK(cudaGetLastError())
