/* drv_check.h: the driver-API test programs' check of every call: on failure, prints the call, its
 * file and line and the error's name, and exits 1. Shipped with them in the tarball (gpu-check). */
#ifndef GPUSPY_TESTS_APPS_DRV_CHECK_H
#define GPUSPY_TESTS_APPS_DRV_CHECK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define DCK(call)                                                                                  \
    do {                                                                                           \
        const CUresult dck_rc_ = (call);                                                           \
        if (dck_rc_ != CUDA_SUCCESS) {                                                             \
            const char* dck_name_ = "?";                                                           \
            cuGetErrorName(dck_rc_, &dck_name_);                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, dck_name_,   \
                    (int)dck_rc_);                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
