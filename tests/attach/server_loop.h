/* tests/attach/server_loop.h: the long-running test servers' common part (gpuspy attach's tests). The
 * server reads commands on stdin, one per line, and idles between them in poll() (or, with --epoll-only,
 * in epoll_wait on its only thread: a thread attach must refuse to borrow):
 *   ping     prints "pong" (the server is up: its libraries are loaded)
 *   init     initialise CUDA now (a server started with --late has not), prints "ready"
 *   work N   N iterations (server_iteration) spread over the worker threads, prints "done N total=T"
 *   quit     prints "bye total=T errors=E" and exits 0 when no CUDA call failed, else 1
 * T counts every iteration since start: the test compares a window's capture with the difference.
 * Around each wait the server checks that errno and its signal mask are as it left them (a thread
 * gpuspy attach borrows must get both back): "bye" reports how many waits found them changed. A
 * SIGUSR1 handler counts the signals it gets (none are sent: a signal gpuspy held back would show as
 * a count the run alone does not have).
 * Workers (--threads K) wait on a condition variable between commands. The server lets any process of
 * its user trace it (PR_SET_PTRACER_ANY), as a server whose admin allows attaching would. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Provided by the server: CUDA set up on the calling thread (and the context shared with workers);
 * one unit of work on the calling thread; both return 0 on success. */
static int server_init(void);
static int server_thread_init(void);
static int server_iteration(void);

enum { kMaxWorkers = 16 };
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER;
static long g_generation = 0, g_share = 0, g_finished = 0, g_total = 0, g_errors = 0;
static int g_workers = 0, g_ready = 0;
static long g_errnoChanged = 0, g_maskChanged = 0;
static volatile sig_atomic_t g_usr1 = 0;

static void on_usr1(int sig)
{
    (void)sig;
    g_usr1 = g_usr1 + 1;
}

static void* worker(void* arg)
{
    long seen = 0;
    (void)arg;
    int threadReady = 0;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        while (g_generation == seen) pthread_cond_wait(&g_go, &g_lock);
        seen = g_generation;
        const long n = g_share;
        pthread_mutex_unlock(&g_lock);
        long errors = 0;
        if (!threadReady) {
            errors += server_thread_init() != 0;
            threadReady = 1;
        }
        for (long i = 0; i < n; ++i) errors += server_iteration() != 0;
        pthread_mutex_lock(&g_lock);
        g_total += n;
        g_errors += errors;
        ++g_finished;
        pthread_cond_signal(&g_done);
        pthread_mutex_unlock(&g_lock);
    }
    return NULL;
}

static void ensure_ready(void)
{
    if (g_ready) return;
    g_errors += server_init() != 0;
    g_ready = 1;
}

static void work(long n)
{
    ensure_ready();
    if (g_workers == 0) {
        for (long i = 0; i < n; ++i) g_errors += server_iteration() != 0;
        g_total += n;
        return;
    }
    pthread_mutex_lock(&g_lock);
    g_share = n / g_workers;
    g_finished = 0;
    ++g_generation;
    pthread_cond_broadcast(&g_go);
    while (g_finished < g_workers) pthread_cond_wait(&g_done, &g_lock);
    pthread_mutex_unlock(&g_lock);
}

/* Signal by signal: the bytes of a sigset_t beyond the kernel's part are not defined. */
static int same_mask(const sigset_t* a, const sigset_t* b)
{
    for (int sig = 1; sig < NSIG; ++sig)
        if (sigismember(a, sig) != sigismember(b, sig)) return 0;
    return 1;
}

/* One line from stdin, waiting in poll() or epoll_wait(); 0 at end of input. */
static int next_line(char* buf, size_t cap, int epfd)
{
    size_t n = 0;
    while (n + 1 < cap) {
        sigset_t before, after;
        pthread_sigmask(SIG_SETMASK, NULL, &before);
        errno = 4242;  /* a successful wait leaves errno alone */
        int rc;
        if (epfd >= 0) {
            struct epoll_event ev;
            rc = epoll_wait(epfd, &ev, 1, -1);
        } else {
            struct pollfd p = {0, POLLIN, 0};
            rc = poll(&p, 1, -1);
        }
        if (rc < 0) continue;
        g_errnoChanged += errno != 4242;
        pthread_sigmask(SIG_SETMASK, NULL, &after);
        g_maskChanged += !same_mask(&before, &after);
        char c;
        const ssize_t r = read(0, &c, 1);
        if (r <= 0) return 0;
        if (c == '\n') break;
        buf[n++] = c;
    }
    buf[n] = 0;
    return 1;
}

static int server_main(int argc, char** argv)
{
    int late = 0, epollOnly = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) g_workers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--late") == 0) late = 1;
        else if (strcmp(argv[i], "--epoll-only") == 0) epollOnly = 1;
        else if (strcmp(argv[i], "--undumpable") == 0) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        else {
            fprintf(stderr, "usage: %s [--threads K] [--late] [--epoll-only] [--undumpable]\n", argv[0]);
            return 2;
        }
    }
    if (g_workers < 0 || g_workers > kMaxWorkers) return 2;
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    signal(SIGUSR1, on_usr1);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!late) ensure_ready();
    for (int i = 0; i < g_workers; ++i) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    }
    int epfd = -1;
    if (epollOnly) {
        epfd = epoll_create1(0);
        struct epoll_event ev = {EPOLLIN, {0}};
        if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &ev) != 0) return 1;
    }
    char line[256];
    while (next_line(line, sizeof line, epfd)) {
        long n = 0;
        if (strcmp(line, "ping") == 0) {
            printf("pong\n");
        } else if (strcmp(line, "init") == 0) {
            ensure_ready();
            printf("ready\n");
        } else if (sscanf(line, "work %ld", &n) == 1 && n > 0) {
            work(n);
            printf("done %ld total=%ld\n", n, g_total);
        } else if (strcmp(line, "quit") == 0) {
            break;
        }
    }
    printf("bye total=%ld errors=%ld errno_changed=%ld mask_changed=%ld usr1=%d\n", g_total, g_errors, g_errnoChanged,
           g_maskChanged, (int)g_usr1);
    return g_errors == 0 ? 0 : 1;
}
