/* tests/hardening/spawn.c: children started with posix_spawn and posix_spawnp (through a shell) do
 * CUDA work of their own. Each inherits the preload with the environment, as after fork and exec, so
 * each must leave its own capture (run_under_shim.sh checks every process against its trace). */
#define _GNU_SOURCE
#include <cuda.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static int work(const char* who, int copies)
{
    static unsigned char host[1 << 14];
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
        cuMemAlloc(&buf, sizeof host))
        return 1;
    int failed = 0;
    for (int i = 0; i < copies; ++i) failed += cuMemcpyHtoD(buf, host, sizeof host) != CUDA_SUCCESS;
    failed += cuMemFree(buf) != CUDA_SUCCESS;
    printf("%s: %d copies, %d failed\n", who, copies, failed);
    fflush(stdout);
    return failed ? 1 : 0;
}

static int waitFor(pid_t pid, const char* how)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 1;
    printf("%s child exited with %d\n", how, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

int main(int argc, char** argv)
{
    if (argc > 1) return work(argv[1], 5);
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    int failed = work("parent", 3);
    pid_t pid;
    char* direct[] = {self, "spawned", NULL};
    if (posix_spawn(&pid, self, NULL, NULL, direct, environ) != 0) return 1;
    failed += waitFor(pid, "posix_spawn");
    char* viaShell[] = {"sh", "-c", "exec \"$0\" spawnp", self, NULL};
    if (posix_spawnp(&pid, "sh", NULL, NULL, viaShell, environ) != 0) return 1;
    failed += waitFor(pid, "posix_spawnp");
    failed += work("parent again", 2);
    return failed;
}
