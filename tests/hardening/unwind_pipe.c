/* tests/hardening/unwind_pipe.c: a server whose client connection lands on the numbers gpuspy's
 * libunwind took for its memory-validation pipe (libunwind 1.6 makes it at the first unwind and keeps
 * the numbers for the life of the process).
 *
 * After a first CUDA call (gpuspy's first stack capture), it puts a socket pair high, queues
 * kRequest bytes from its "client" and dup2s its end onto 3..63, then makes CUDA calls through a frame
 * without unwind information (nounwind.c), where libunwind validates the memory it reads through that
 * pipe. The server must then read every byte its client sent, and the client receive nothing. */
#include "driver_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kRequest = 1000, kCalls = 200 };

long launchWithoutUnwindInfo(CUfunction fn, CUdeviceptr buf, int n);  /* nounwind.c */

static long drain(int fd)
{
    char buf[4096];
    long total = 0;
    for (;;) {
        const ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return total;
        total += r;
    }
}

int main(void)
{
    struct HzDriver drv;
    if (hzDriverSetUp(&drv, "unwind_pipe", "unwind_kernel")) return 1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 3;
    const int server = fcntl(sv[0], F_DUPFD, 200), client = fcntl(sv[1], F_DUPFD, 200);
    close(sv[0]);
    close(sv[1]);
    char request[kRequest];
    memset(request, 'r', sizeof request);
    if (write(client, request, sizeof request) != (ssize_t)sizeof request) return 3;
    for (int fd = 3; fd < 64; ++fd) dup2(server, fd);

    const long failed = launchWithoutUnwindInfo(drv.fn, drv.buf, kCalls);
    const long got = drain(server);
    const long unexpected = drain(client);
    printf("%d launches through a frame without unwind info, %ld failed\n", kCalls, failed);
    printf("the server read %ld of the client's %d bytes; the client received %ld bytes\n", got, kRequest, unexpected);
    return failed || got != kRequest || unexpected != 0 ? 1 : 0;
}
