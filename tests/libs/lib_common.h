// lib_common.h: the error checks shared by the NVIDIA-library test programs. Any failure ends the program with
// a message naming the call and status 1, so a test never passes on a half-run program. Kernels do not run on
// the simulated driver: the programs print what they did, never numeric results.
#pragma once
#include "../apps/app_common.h"  // CK: a CUDA runtime call that fails ends the program

// Library calls returning a status enum whose success value is 0.
#define CK_STATUS(call)                                                                            \
    do {                                                                                           \
        const int ck_st_ = (int)(call);                                                            \
        if (ck_st_ != 0) {                                                                         \
            std::fprintf(stderr, "%s:%d: %s failed: status %d\n", __FILE__, __LINE__, #call, ck_st_); \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)
