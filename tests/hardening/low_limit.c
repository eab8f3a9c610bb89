/* tests/hardening/low_limit.c: an app that lowers its descriptor limit before its first CUDA call.
 *
 *   low_limit LIMIT
 *
 * Sets RLIMIT_NOFILE to LIMIT, sets up the driver and launches 200 kernels (gpuspy, if preloaded, has
 * connected to its collector and unwound stacks by then), waits for the device, then opens /dev/null
 * until it cannot and prints how many it opened: the same with gpuspy as without (issue 30: the shim's
 * socket and libunwind's pipe, made at the first call, took three of the app's numbers). */
#include "driver_setup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: low_limit LIMIT\n");
        return 2;
    }
    const struct rlimit rl = {(rlim_t)atol(argv[1]), (rlim_t)atol(argv[1])};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        perror("setrlimit");
        return 1;
    }
    struct HzDriver drv;
    if (hzDriverSetUp(&drv, "low_limit", "limit_kernel")) return 1;
    void* params[] = {&drv.buf};
    long failed = 0;
    for (int i = 0; i < 200; ++i)
        if (cuLaunchKernel(drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    const struct timespec settle = {0, 200000000};  /* gpuspy's drain thread done with its first pass */
    nanosleep(&settle, NULL);
    int fds[4096];
    int opened = 0;
    /* Up to the limit, and once more after a pause where the first EMFILE came: gpuspy's drain thread
     * may hold a descriptor for a few microseconds (reading /proc/self/task/N/comm or /proc/self/maps,
     * which opens at the lowest free number before it moves up), and what is checked is that it keeps
     * none of the app's numbers. */
    for (int tries = 0; tries < 2; ++tries) {
        while (opened < 4096 && (fds[opened] = open("/dev/null", O_RDONLY)) >= 0) ++opened;
        const struct timespec pause = {0, 50000000};
        if (tries == 0) nanosleep(&pause, NULL);
    }
    for (int i = 0; i < opened; ++i) close(fds[i]);
    for (int i = 0; i < 200; ++i)
        if (cuLaunchKernel(drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    printf("limit %s: opened %d descriptors; 400 launches, %ld failed\n", argv[1], opened, failed);
    hzDriverTearDown(&drv);
    return 0;
}
