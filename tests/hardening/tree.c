/* tests/hardening/tree.c: process trees that `gpuspy record` must follow or name (issue 30).
 *
 *   tree daemon_chain DELAY_MS HOPS LAUNCHES DONEFILE
 *       A daemon behind a chain of execs: double-forks (its own session, cwd /, stdio on /dev/null) and
 *       returns at once; the grandchild waits DELAY_MS, then execs HOPS times (every other hop through
 *       /bin/sh -c 'exec ...', 20 ms apart) before the last image makes LAUNCHES launches and writes
 *       "hop: N launches, F failed" into DONEFILE.
 *   tree children HOW N LAUNCHES
 *       LAUNCHES launches, then N children, one after the other, each this program exec'd as
 *       `tree work LAUNCHES` with an environment that drops LD_PRELOAD (HOW=nopreload) or
 *       GPUSPY_SOCKET (HOW=nosocket); prints each child's exit status.
 *   tree work LAUNCHES [HOLD_MS]
 *       LAUNCHES launches, then HOLD_MS (children: 300) before it exits, standing in for the time a real
 *       driver takes to start (the simulated one takes none: a child would live a few milliseconds);
 *       prints "work: N launches, F failed".
 *   tree close_range LAUNCHES TIMES
 *       LAUNCHES launches; TIMES times in the middle of the loop (evenly spaced) it closes every
 *       descriptor above 2 with close_range(2), as a server does before it runs a child.
 *
 * The output depends only on the arguments and the results the driver returned. */
#define _GNU_SOURCE
#include "driver_setup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static struct HzDriver g_drv;

static long launch(long n)
{
    long failed = 0;
    void* params[] = {&g_drv.buf};
    for (long i = 0; i < n; ++i)
        if (cuLaunchKernel(g_drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    return failed;
}

static void sleepMs(long ms)
{
    const struct timespec d = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&d, NULL);
}

/* The last hop of the chain: its launches, and the line the test reads. */
static int lastHop(long launches, const char* done)
{
    if (hzDriverSetUp(&g_drv, "tree hop", "tree_kernel")) return 1;
    const long failed = launch(launches);
    hzDriverTearDown(&g_drv);
    FILE* f = fopen(done, "w");
    if (!f) return 3;
    fprintf(f, "hop: %ld launches, %ld failed\n", launches, failed);
    fclose(f);
    return failed ? 1 : 0;
}

/* `tree hop K LAUNCHES DONEFILE`: K more execs to go. */
static int hop(char* self, long left, char* launches, char* done)
{
    if (left <= 0) return lastHop(atol(launches), done);
    sleepMs(20);
    char next[24];
    snprintf(next, sizeof next, "%ld", left - 1);
    if (left % 2) {
        char* argv[] = {self, "hop", next, launches, done, NULL};
        execv(self, argv);
    } else {
        char* argv[] = {"/bin/sh", "-c", "exec \"$0\" \"$@\"", self, "hop", next, launches, done, NULL};
        execv("/bin/sh", argv);
    }
    return 127;
}

static int daemonChain(char* self, long delayMs, char* hops, char* launches, char* done)
{
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child > 0) {
        int st = 0;
        waitpid(child, &st, 0);
        printf("tree: daemon started\n");
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    setsid();
    if (fork() != 0) _exit(0);
    if (chdir("/") != 0) _exit(1);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    sleepMs(delayMs);
    _exit(hop(self, atol(hops), launches, done));
}

/* The environment without the variable `drop`. */
static char** without(const char* drop)
{
    size_t n = 0;
    while (environ[n]) ++n;
    char** env = calloc(n + 1, sizeof *env);
    const size_t len = strlen(drop);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i)
        if (!(strncmp(environ[i], drop, len) == 0 && environ[i][len] == '=')) env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

static int children(char* self, const char* how, long n, char* launches)
{
    const char* drop = strcmp(how, "nopreload") == 0 ? "LD_PRELOAD" : strcmp(how, "nosocket") == 0 ? "GPUSPY_SOCKET" : NULL;
    if (!drop) return 2;
    if (hzDriverSetUp(&g_drv, "tree children", "tree_kernel")) return 1;
    long failed = launch(atol(launches));
    printf("children: %s launches, %ld failed\n", launches, failed);
    fflush(stdout);
    char** env = without(drop);
    for (long i = 0; i < n; ++i) {
        const pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            char* argv[] = {self, "work", launches, "300", NULL};
            execve(self, argv, env);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf("child %ld: status %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        fflush(stdout);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) ++failed;
    }
    hzDriverTearDown(&g_drv);
    return failed ? 1 : 0;
}

static int work(long launches, long holdMs)
{
    if (hzDriverSetUp(&g_drv, "tree work", "tree_kernel")) return 1;
    const long failed = launch(launches);
    sleepMs(holdMs);
    hzDriverTearDown(&g_drv);
    printf("work: %ld launches, %ld failed\n", launches, failed);
    return failed ? 1 : 0;
}

static int closeRangeLoop(long launches, long times)
{
    if (hzDriverSetUp(&g_drv, "tree close_range", "tree_kernel")) return 1;
    long failed = 0, closes = 0;
    const long every = launches / (times + 1);
    void* params[] = {&g_drv.buf};
    for (long i = 0; i < launches; ++i) {
        if (every > 0 && i > 0 && i % every == 0 && closes < times) {
            if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) ++failed;
            ++closes;
        }
        if (cuLaunchKernel(g_drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    }
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    printf("close_range: %ld launches, %ld closes, %ld failed\n", launches, closes, failed);
    return failed ? 1 : 0;
}

int main(int argc, char** argv)
{
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return 2;
    self[len] = 0;
    const char* mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "daemon_chain") == 0 && argc == 6) return daemonChain(self, atol(argv[2]), argv[3], argv[4], argv[5]);
    if (strcmp(mode, "hop") == 0 && argc == 5) return hop(self, atol(argv[2]), argv[3], argv[4]);
    if (strcmp(mode, "children") == 0 && argc == 5) return children(self, argv[2], atol(argv[3]), argv[4]);
    if (strcmp(mode, "work") == 0 && (argc == 3 || argc == 4)) return work(atol(argv[2]), argc == 4 ? atol(argv[3]) : 0);
    if (strcmp(mode, "close_range") == 0 && argc == 4) return closeRangeLoop(atol(argv[2]), atol(argv[3]));
    fprintf(stderr, "usage: tree daemon_chain DELAY_MS HOPS LAUNCHES DONEFILE | children nopreload|nosocket N LAUNCHES |\n"
                    "            work LAUNCHES [HOLD_MS] | close_range LAUNCHES TIMES\n");
    return 2;
}
