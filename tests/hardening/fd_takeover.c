/* tests/hardening/fd_takeover.c: a server that takes descriptor numbers after CUDA init.
 *
 *   fd_takeover MODE DATAFILE        MODE: low | all | closefrom
 *
 * Launches kLaunches kernels, then opens its data file and takes numbers over with it: `low` dup2s it
 * onto 3..63 (a server arranging its descriptors), `all` onto every open descriptor above 2 (whatever
 * gpuspy holds included), `closefrom` closes every descriptor above 2 and opens the file again (it gets
 * the lowest number). It writes its lines through each number it took, launches kLaunches more and
 * exits. The data file must hold its lines and nothing else, and every launch must be in the capture. */
#include "driver_setup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kLaunches = 500, kMaxFd = 1024 };

static struct HzDriver g_drv;

static long launch(int n)
{
    long failed = 0;
    void* params[] = {&g_drv.buf};
    for (int i = 0; i < n; ++i)
        if (cuLaunchKernel(g_drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
    if (cuCtxSynchronize() != CUDA_SUCCESS) ++failed;
    return failed;
}

/* The open descriptors above 2 (other than `keep`), as /proc/self/fd lists them. */
static int openDescriptors(int* out, int keep)
{
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    if (!d) return 0;
    const int self = dirfd(d);
    for (struct dirent* e; (e = readdir(d)) && n < kMaxFd;) {
        const int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != self && fd != keep) out[n++] = fd;
    }
    closedir(d);
    return n;
}

/* With HZ_QUIET_FILE set (the capture's path), `all` waits (10 s at most) until gpuspy's output is open
 * (a capture file or a socket above 63: moved out of the app's way), so that it takes that number over
 * for sure (the drain thread opens it on its own schedule), then until the capture's size holds still
 * (gpuspy wrote what the first launches made). gpuspy checks its descriptor before each write batch;
 * a takeover in the one system call between that check and the write, or between its open and the
 * move, is a window it cannot close, which this test does not aim at. */
static void waitForQuietFile(const char* path)
{
    long last = -1;
    for (int still = 0, tries = 0; still < 5 && tries < 1000; ++tries) {
        struct stat st;
        const long size = stat(path, &st) == 0 ? (long)st.st_size : -1;
        still = size > 0 && size == last ? still + 1 : 0;
        last = size;
        usleep(20000);
    }
}

static void waitForGpuspyOutput(void)
{
    const char* quiet = getenv("HZ_QUIET_FILE");  /* the capture, whose size stops changing when gpuspy idles */
    if (!quiet) return;
    for (int tries = 0; tries < 1000; ++tries) {
        int fds[kMaxFd];
        const int n = openDescriptors(fds, -1);
        for (int i = 0; i < n; ++i) {
            char link[64], target[512];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fds[i]);
            const ssize_t len = readlink(link, target, sizeof target - 1);
            if (len <= 0) continue;
            target[len] = 0;
            /* The capture file is made unnamed at load (O_TMPFILE) and named when it is used: its link
             * keeps the unnamed form, "DIR/#INODE (deleted)". */
            if (fds[i] >= 64 && (strncmp(target, "socket:", 7) == 0 || strstr(target, ".gspy") || strstr(target, "/#"))) {
                waitForQuietFile(quiet);
                return;
            }
        }
        usleep(10000);
    }
}

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fd_takeover low|all|closefrom DATAFILE\n");
        return 2;
    }
    const char* mode = argv[1];
    if (hzDriverSetUp(&g_drv, "fd_takeover", "takeover_kernel")) return 1;
    long failed = launch(kLaunches);

    int taken[kMaxFd], n = 0;
    int data = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (data < 0) return 3;
    if (strcmp(mode, "closefrom") == 0) {
        for (int fd = 3; fd < kMaxFd; ++fd) close(fd);
        data = open(argv[2], O_WRONLY | O_APPEND);
        if (data < 0) return 3;
        taken[n++] = data;
    } else {
        int fds[kMaxFd], k = 0;
        if (strcmp(mode, "low") == 0) {
            for (int fd = 3; fd < 64; ++fd)
                if (fd != data) fds[k++] = fd;
        } else {
            waitForGpuspyOutput();
            k = openDescriptors(fds, data);
        }
        for (int i = 0; i < k; ++i)
            if (dup2(data, fds[i]) == fds[i]) taken[n++] = fds[i];
    }
    for (int i = 0; i < n; ++i) {
        char line[64];
        const int len = snprintf(line, sizeof line, "the app's line through a taken number\n");
        if (write(taken[i], line, (size_t)len) != len) {
            fprintf(stderr, "writing through %d failed: %s\n", taken[i], strerror(errno));
            ++failed;
        }
    }
    failed += launch(kLaunches);
    printf("%s: %d launches, %ld failed\n", mode, 2 * kLaunches, failed);
    fflush(stdout);
    /* Every taken number is written once: the file's line count is n, which the test reads back. */
    fprintf(stderr, "took %d numbers\n", n);
    return failed ? 1 : 0;
}
