/* tests/hardening/sig_default.c: a process ended by a signal it has no handler for.
 *
 *   sig_default SIGNAL LAUNCHES
 *
 * Launches LAUNCHES kernels, prints a line, and sends itself SIGNAL (a number) with its default action:
 * it must die of that signal (same wait status) with every launch and the End record in the capture. */
#include "driver_setup.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sig_default SIGNAL LAUNCHES\n");
        return 2;
    }
    const int sig = atoi(argv[1]);
    const long launches = atol(argv[2]);
    struct HzDriver drv;
    if (hzDriverSetUp(&drv, "sig_default", "signal_kernel")) return 1;
    long failed = 0;
    void* params[] = {&drv.buf};
    for (long i = 0; i < launches; ++i)
        if (cuLaunchKernel(drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    printf("%ld launches, %ld failed; now signal %d\n", launches, failed, sig);
    fflush(stdout);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    for (;;) pause();
}
