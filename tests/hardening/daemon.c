/* tests/hardening/daemon.c: processes that change what gpuspy saw when it loaded before their first
 * CUDA call.
 *
 *   daemon MODE DONEFILE [DIR]
 *
 * daemon:   daemon(0, 0) (forks, new session, chdir to /, stdio to /dev/null), then the CUDA calls;
 * clearenv: clearenv() first;  chdir: chdir(DIR) first;  gone: removes DIR, its working directory;
 * setuid: setgid/setuid(DIR, a numeric uid) first, as a server that drops its privileges.
 * Then kLaunches launches; writes "done" into DONEFILE (an absolute path) from an exit handler
 * registered before the first CUDA call, so after gpuspy's own (which finishes the capture). */
#include "driver_setup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kLaunches = 300 };

static const char* g_done;
static int g_failed;

static void writeDone(void)
{
    int fd = open(g_done, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return;
    if (write(fd, g_failed ? "failed\n" : "done\n", g_failed ? 7 : 5) < 0) g_failed = 1;
    close(fd);
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: daemon daemon|clearenv|chdir|gone|setuid DONEFILE [DIR|UID]\n");
        return 2;
    }
    const char* mode = argv[1];
    if (strcmp(mode, "daemon") == 0) {
        printf("daemon: detaching\n");
        fflush(stdout);
        if (daemon(0, 0) != 0) return 3;
    } else if (strcmp(mode, "clearenv") == 0) {
        clearenv();
    } else if (strcmp(mode, "chdir") == 0 && argc > 3) {
        if (chdir(argv[3]) != 0) return 3;
    } else if (strcmp(mode, "gone") == 0 && argc > 3) {
        if (rmdir(argv[3]) != 0) return 3;
    } else if (strcmp(mode, "setuid") == 0 && argc > 3) {
        const unsigned id = (unsigned)strtoul(argv[3], NULL, 10);
        if (setgid(id) != 0 || setuid(id) != 0) return 3;
    }
    g_done = argv[2];
    g_failed = 1;
    atexit(writeDone);
    struct HzDriver drv;
    if (hzDriverSetUp(&drv, "daemon", "daemon_kernel")) return 1;
    long failed = 0;
    void* params[] = {&drv.buf};
    for (int i = 0; i < kLaunches; ++i)
        if (cuLaunchKernel(drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    hzDriverTearDown(&drv);
    if (strcmp(mode, "daemon") != 0) printf("%s: %d launches, %ld failed\n", mode, kLaunches, failed);
    g_failed = failed != 0;
    return g_failed;
}
