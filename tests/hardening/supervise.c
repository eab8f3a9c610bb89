/* tests/hardening/supervise.c: a statically linked supervisor (the loader preloads nothing into it, so
 * gpuspy cannot be loaded there) that starts a daemon the way servers do.
 *
 *   supervise DELAY_MS PROGRAM ARGS...
 *
 * Double-forks: the command returns at once, and the grandchild (its own session, stdio on /dev/null)
 * waits DELAY_MS, then execs PROGRAM with the environment it was given. gpuspy record must follow it
 * (its environment carries gpuspy's settings although no process of the chain has the shim loaded
 * until the exec), not end before the worker's first CUDA call. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: supervise DELAY_MS PROGRAM ARGS...\n");
        return 2;
    }
    const long delayMs = atol(argv[1]);
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child > 0) {
        int st = 0;
        waitpid(child, &st, 0);
        printf("supervise: started %s\n", argv[2]);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    setsid();
    if (fork() != 0) _exit(0);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    const struct timespec d = {delayMs / 1000, (delayMs % 1000) * 1000000};
    nanosleep(&d, NULL);
    execv(argv[2], argv + 2);
    _exit(127);
}
