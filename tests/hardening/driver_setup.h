/* tests/hardening/driver_setup.h: what the hardening programs that launch a kernel share: the driver
 * set-up (primary context, a module and its kernel, a 4 KiB buffer), its teardown, and the pause
 * that lets the test act on the collector in the middle of a run. */
#ifndef GPUSPY_HARDENING_DRIVER_SETUP_H
#define GPUSPY_HARDENING_DRIVER_SETUP_H

#include <cuda.h>
#include <stdio.h>

struct HzDriver {
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr buf;
};

/* The simulated driver loads no code: any image names a module, any name a kernel in it. Returns 0,
 * or 1 after saying on stderr that `who` could not set up the driver. */
static inline int hzDriverSetUp(struct HzDriver* d, const char* who, const char* kernel)
{
    static const char image[] = "hardening module";
    if (cuInit(0) || cuDeviceGet(&d->dev, 0) || cuDevicePrimaryCtxRetain(&d->ctx, d->dev) ||
        cuCtxSetCurrent(d->ctx) || cuModuleLoadData(&d->mod, image) || cuModuleGetFunction(&d->fn, d->mod, kernel) ||
        cuMemAlloc(&d->buf, 4096)) {
        fprintf(stderr, "%s: driver set-up failed\n", who);
        return 1;
    }
    return 0;
}

static inline void hzDriverTearDown(struct HzDriver* d)
{
    cuMemFree(d->buf);
    cuModuleUnload(d->mod);
    cuDevicePrimaryCtxRelease(d->dev);
}

/* Prints "paused" and waits for a line on stdin (the test stalls, kills or restarts the collector
 * meanwhile). Returns 0, or 1 when stdin ended first. */
static inline int hzPause(void)
{
    printf("paused\n");
    fflush(stdout);
    char line[64];
    return fgets(line, sizeof line, stdin) ? 0 : 1;
}

#endif
