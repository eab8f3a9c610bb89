/* tests/hardening/exit_hazards.c: processes that end in the middle of something (issue 30).
 *
 *   exit_hazards term_race LAUNCHES DELAY_US [handler]
 *       LAUNCHES launches, a line, then exit(0) while another thread sends the process SIGTERM DELAY_US
 *       after exit began (a supervisor's stop racing the app's own shutdown). Without gpuspy the exit
 *       is over long before: status 0. handler: the app's own SIGTERM handler, which says so and ends
 *       the process with _exit(3) (a server's shutdown handler); without gpuspy it never runs.
 *   exit_hazards handler_exit LAUNCHES
 *       A SIGTERM handler that calls exit(0), and a hot launch loop of LAUNCHES: the test makes the
 *       simulated driver raise SIGTERM inside one launch (SIMCUDA_SIGNAL), its lock held, so the
 *       handler exits from inside a driver call, as a pre-fork server's worker does. The handler says
 *       how many launches returned before it.
 *   exit_hazards burst_exit LAUNCHES
 *       LAUNCHES back-to-back launches, a line, then _exit(0) at once (no sync, no atexit).
 *
 * The output depends only on the arguments and the results the driver returned. */
#include "driver_setup.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct HzDriver g_drv;
static volatile long g_returned;  /* launches that returned (read by the handler) */
static volatile int g_exiting;
static long g_delayUs;

static long launchLoop(long launches)
{
    long failed = 0;
    void* params[] = {&g_drv.buf};
    for (long i = 0; i < launches; ++i) {
        if (cuLaunchKernel(g_drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++failed;
        g_returned = i + 1;
    }
    return failed;
}

static void* terminator(void* arg)
{
    (void)arg;
    while (!g_exiting) {
        const struct timespec spin = {0, 10000};
        nanosleep(&spin, NULL);
    }
    const struct timespec delay = {g_delayUs / 1000000, (g_delayUs % 1000000) * 1000};
    nanosleep(&delay, NULL);
    kill(getpid(), SIGTERM);
    return NULL;
}

/* Async-signal-safe: formats the count by hand and writes it. */
static void onTerm(int sig)
{
    (void)sig;
    char line[64] = "handler: exiting after ";
    char digits[24];
    int n = 0;
    long v = g_returned;
    do digits[n++] = (char)('0' + v % 10); while ((v /= 10) > 0 && n < 20);
    size_t len = strlen(line);
    while (n > 0) line[len++] = digits[--n];
    memcpy(line + len, " launches\n", 10);
    len += 10;
    ssize_t w = write(1, line, len);
    (void)w;
    exit(0);
}

/* term_race's handler: a line, then _exit(3), as a server's shutdown handler might end. */
static void onTermShutdown(int sig)
{
    (void)sig;
    static const char line[] = "handler: SIGTERM, shutting down\n";
    ssize_t w = write(1, line, sizeof line - 1);
    (void)w;
    _exit(3);
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: exit_hazards term_race|handler_exit|burst_exit LAUNCHES [DELAY_US [handler]]\n");
        return 2;
    }
    const char* mode = argv[1];
    const long launches = atol(argv[2]);
    if (hzDriverSetUp(&g_drv, "exit_hazards", "exit_kernel")) return 1;
    if (strcmp(mode, "term_race") == 0) {
        g_delayUs = argc > 3 ? atol(argv[3]) : 200;
        if (argc > 4 && strcmp(argv[4], "handler") == 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = onTermShutdown;
            sigemptyset(&sa.sa_mask);
            sigaction(SIGTERM, &sa, NULL);
        }
        const long failed = launchLoop(launches);
        if (cuCtxSynchronize() != CUDA_SUCCESS) return 1;
        printf("%ld launches, %ld failed; exit(0) with SIGTERM %ld us later\n", launches, failed, g_delayUs);
        fflush(stdout);
        pthread_t t;
        if (pthread_create(&t, NULL, terminator, NULL) != 0) return 1;
        /* Detached: under gpuspy the exit lasts long enough for it to finish, and a finished thread
         * nobody joins is a leak to ThreadSanitizer (the sanitizer builds preload its runtime). */
        pthread_detach(t);
        g_exiting = 1;
        exit(0);
    }
    if (strcmp(mode, "handler_exit") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = onTerm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        launchLoop(launches);
        printf("no signal came in %ld launches\n", launches);
        return 3;
    }
    if (strcmp(mode, "burst_exit") == 0) {
        const long failed = launchLoop(launches);
        printf("%ld launches, %ld failed; _exit(0)\n", launches, failed);
        fflush(stdout);
        _exit(0);
    }
    fprintf(stderr, "exit_hazards: unknown mode %s\n", mode);
    return 2;
}
