/* tests/hardening/prefork.c: a pre-fork server: a master that never calls CUDA forks its workers, which
 * do the GPU work.
 *
 *   prefork WORKERS LAUNCHES [LIMIT]
 *
 * The master forks WORKERS workers at once and waits for them. Each worker (LIMIT given: after lowering
 * its RLIMIT_NOFILE to LIMIT) sets up the driver, makes LAUNCHES launches, waits for the device, and
 * (LIMIT given) opens /dev/null until it cannot; it exits with 0, or 1 when a call failed. The master
 * prints one line per worker, in fork order: its exit status and how many descriptors it opened. */
#include "driver_setup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxWorkers = 16 };

static int worker(long launches, long limit, int report)
{
    if (limit > 0) {
        const struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
    }
    struct HzDriver drv;
    if (hzDriverSetUp(&drv, "prefork worker", "worker_kernel")) return 1;
    void* params[] = {&drv.buf};
    int failed = 0;
    for (long i = 0; i < launches; ++i)
        if (cuLaunchKernel(drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) failed = 1;
    if (cuCtxSynchronize() != CUDA_SUCCESS) failed = 1;
    int opened = 0;
    if (limit > 0) {
        const struct timespec settle = {0, 200000000};  /* gpuspy's drain thread done with its first pass */
        nanosleep(&settle, NULL);
        int fds[4096];
        while (opened < 4096 && (fds[opened] = open("/dev/null", O_RDONLY)) >= 0) ++opened;
        for (int i = 0; i < opened; ++i) close(fds[i]);
    }
    hzDriverTearDown(&drv);
    /* The count goes to the master through a pipe: the workers' output would interleave. */
    ssize_t w = write(report, &opened, sizeof opened);
    (void)w;
    return failed;
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: prefork WORKERS LAUNCHES [LIMIT]\n");
        return 2;
    }
    const int workers = atoi(argv[1]);
    const long launches = atol(argv[2]);
    const long limit = argc > 3 ? atol(argv[3]) : 0;
    if (workers < 1 || workers > kMaxWorkers) return 2;
    pid_t pids[kMaxWorkers];
    int pipes[kMaxWorkers][2];
    for (int i = 0; i < workers; ++i) {
        if (pipe(pipes[i]) != 0) return 1;
        pids[i] = fork();
        if (pids[i] < 0) return 1;
        if (pids[i] == 0) {
            close(pipes[i][0]);
            exit(worker(launches, limit, pipes[i][1]));
        }
        close(pipes[i][1]);
    }
    int bad = 0;
    for (int i = 0; i < workers; ++i) {
        int status = 0, opened = -1;
        if (waitpid(pids[i], &status, 0) != pids[i]) return 1;
        if (read(pipes[i][0], &opened, sizeof opened) != (ssize_t)sizeof opened) opened = -1;
        close(pipes[i][0]);
        printf("worker %d: status %d, %ld launches, opened %d descriptors\n", i, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
               launches, opened);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bad = 1;
    }
    return bad;
}
