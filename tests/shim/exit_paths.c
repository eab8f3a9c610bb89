/* tests/shim/exit_paths.c: a driver-API program that makes a few recorded calls, then leaves by the
 * path named on its command line: term (SIGTERM, default action), int (SIGINT), segv (a real fault),
 * abort, handler (SIGTERM with the app's own handler, which prints and calls _exit(42)), _exit,
 * quick_exit, exec (execv of /bin/true). Under the shim the exit status and output must be the same,
 * and the capture must hold every call made before, readable (run_under_shim.sh, compare_capture). */
#define _GNU_SOURCE
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void onTerm(int sig)
{
    (void)sig;
    static const char msg[] = "app handler ran\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
    _exit(42);
}

int main(int argc, char** argv)
{
    const char* how = argc > 1 ? argv[1] : "";
    if (strcmp(how, "handler") == 0) signal(SIGTERM, onTerm);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 1;
    if (cuMemAlloc(&buf, 1 << 16)) return 1;
    for (int i = 0; i < 20; ++i) {
        cuMemsetD8Async(buf, (unsigned char)i, 1 << 16, 0);
        cuMemsetD32(buf, (unsigned)i, 1 << 14);
    }
    cuStreamSynchronize(0);
    printf("leaving by %s\n", how);
    fflush(stdout);
    if (strcmp(how, "term") == 0) raise(SIGTERM);
    else if (strcmp(how, "int") == 0) kill(getpid(), SIGINT);
    else if (strcmp(how, "handler") == 0) raise(SIGTERM);
    else if (strcmp(how, "segv") == 0) {
        volatile int* volatile bad = NULL;
        *bad = 1;
    }
    else if (strcmp(how, "abort") == 0) abort();
    else if (strcmp(how, "_exit") == 0) _exit(5);
    else if (strcmp(how, "quick_exit") == 0) quick_exit(6);
    else if (strcmp(how, "exec") == 0) {
        char* args[] = {"true", NULL};
        execv("/bin/true", args);
        return 9;
    }
    return 0;
}
