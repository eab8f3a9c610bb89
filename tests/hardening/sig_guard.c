/* tests/hardening/sig_guard.c: a runtime that takes SIGSEGV in normal operation (JVM-style guard
 * pages): its handler unprotects the page and the access goes on.
 *
 *   sig_guard LAUNCHES FAULTS
 *
 * Launches LAUNCHES kernels first (enough to fill a collector's socket that nobody reads), then
 * touches a protected page FAULTS times. Prints what it did on stdout, and on stderr the time the
 * faults took (the test bounds it: the app's handler must run at once, not after gpuspy wrote out). */
#include "driver_setup.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static char* g_page;
static long g_pageSize;
static volatile sig_atomic_t g_faults;

static void onSegv(int sig, siginfo_t* info, void* ctx)
{
    (void)sig, (void)ctx;
    if ((char*)info->si_addr < g_page || (char*)info->si_addr >= g_page + g_pageSize) abort();
    ++g_faults;
    mprotect(g_page, (size_t)g_pageSize, PROT_READ | PROT_WRITE);
}

static double nowS(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sig_guard LAUNCHES FAULTS\n");
        return 2;
    }
    const long launches = atol(argv[1]);
    const int faults = atoi(argv[2]);
    struct HzDriver drv;
    if (hzDriverSetUp(&drv, "sig_guard", "guard_kernel")) return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onSegv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);

    long failed = 0;
    void* params[] = {&drv.buf};
    for (long i = 0; i < launches; ++i)
        if (cuLaunchKernel(drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;

    g_pageSize = sysconf(_SC_PAGESIZE);
    g_page = mmap(NULL, (size_t)g_pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_page == MAP_FAILED) return 3;
    const double t0 = nowS();
    for (int i = 0; i < faults; ++i) {
        mprotect(g_page, (size_t)g_pageSize, PROT_NONE);
        ((volatile char*)g_page)[i] = 1;  /* faults; the handler lets it through */
    }
    const double took = nowS() - t0;
    printf("%ld launches, %ld failed; %d faults handled\n", launches, failed, (int)g_faults);
    fprintf(stderr, "faults took %.6f s\n", took);
    fflush(stdout);
    _exit(failed ? 1 : 0);  /* quickly: the stalled collector would hold a normal exit for its time limit */
}
