/* tests/shim/exit_paths.c: a driver-API program that makes a few recorded calls, then leaves by the
 * path named on its command line: term (SIGTERM, default action), int (SIGINT), segv (a real fault),
 * abort, handler (SIGTERM with the app's own handler, which prints and calls _exit(42)), _exit,
 * quick_exit, exec (execv of /bin/true), execl/execlp/execle (the list forms: echo or sh prints what
 * arrived). The late_* paths install the app's handlers after the shim
 * put its own in (at the first CUDA call): late_reraise (a handler that prints, restores the default
 * action with signal() and raises again: 143), late_resethand (an SA_RESETHAND handler: the first
 * SIGTERM runs it, the second kills), late_ignore (SIG_IGN: SIGTERM does nothing), late_query (what
 * sigaction and signal report as the current actions: the app's own, never gpuspy's). Under the shim
 * the exit status and output must be the same, and the capture must hold every call made before,
 * readable (run_under_shim.sh, compare_capture). */
#define _GNU_SOURCE
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void onTerm(int sig)
{
    (void)sig;
    static const char msg[] = "app handler ran\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
    _exit(42);
}

static void printAndReraise(int sig)
{
    static const char msg[] = "app handler ran, raising again\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void printOnce(int sig)
{
    (void)sig;
    static const char msg[] = "one-shot handler ran\n";
    ssize_t r = write(1, msg, sizeof msg - 1);
    (void)r;
}

static void onInt(int sig) { (void)sig; }

/* The app's view of its handlers, set late (after the shim's went in). */
static void queryActions(void)
{
    struct sigaction old;
    sigaction(SIGTERM, NULL, &old);
    printf("SIGTERM action: %s\n", old.sa_handler == SIG_DFL ? "default" : "something else");
    void (*prev)(int) = signal(SIGINT, onInt);
    printf("signal(SIGINT) returned: %s\n", prev == SIG_DFL ? "default" : "something else");
    sigaction(SIGINT, NULL, &old);
    printf("SIGINT action: %s, flags %s\n", old.sa_handler == onInt ? "the app's handler" : "something else",
           (old.sa_flags & SA_RESTART) ? "restart" : "no restart");
    prev = signal(SIGINT, SIG_DFL);
    printf("signal(SIGINT) returned: %s\n", prev == onInt ? "the app's handler" : "something else");
}

int main(int argc, char** argv)
{
    const char* how = argc > 1 ? argv[1] : "";
    if (strcmp(how, "handler") == 0) signal(SIGTERM, onTerm);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 1;
    if (cuMemAlloc(&buf, 1 << 16)) return 1;
    for (int i = 0; i < 20; ++i) {
        cuMemsetD8Async(buf, (unsigned char)i, 1 << 16, 0);
        cuMemsetD32(buf, (unsigned)i, 1 << 14);
    }
    cuStreamSynchronize(0);
    printf("leaving by %s\n", how);
    fflush(stdout);
    if (strcmp(how, "term") == 0) raise(SIGTERM);
    else if (strcmp(how, "int") == 0) kill(getpid(), SIGINT);
    else if (strcmp(how, "handler") == 0) raise(SIGTERM);
    else if (strcmp(how, "segv") == 0) {
        volatile int* volatile bad = NULL;
        *bad = 1;
    }
    else if (strcmp(how, "abort") == 0) abort();
    else if (strcmp(how, "late_reraise") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = printAndReraise;
        sigaction(SIGTERM, &sa, NULL);
        raise(SIGTERM);
    }
    else if (strcmp(how, "late_resethand") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = printOnce;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGTERM, &sa, NULL);
        raise(SIGTERM);
        printf("survived the first SIGTERM\n");
        fflush(stdout);
        raise(SIGTERM);
    }
    else if (strcmp(how, "late_ignore") == 0) {
        signal(SIGTERM, SIG_IGN);
        raise(SIGTERM);
        printf("SIGTERM ignored\n");
    }
    else if (strcmp(how, "late_query") == 0) queryActions();
    else if (strcmp(how, "_exit") == 0) _exit(5);
    else if (strcmp(how, "quick_exit") == 0) quick_exit(6);
    else if (strcmp(how, "exec") == 0) {
        char* args[] = {"true", NULL};
        execv("/bin/true", args);
        return 9;
    }
    /* The list forms (gpuspy gathers their arguments and calls the execv* form): stdout shows that
       every argument, and execle's environment, reached the new program. */
    else if (strcmp(how, "execl") == 0) {
        execl("/bin/echo", "echo", "execl:", "a", "b c", "d", (char*)NULL);
        return 9;
    }
    else if (strcmp(how, "execlp") == 0) {
        execlp("echo", "echo", "execlp:", "x", (char*)NULL);
        return 9;
    }
    else if (strcmp(how, "execle") == 0) {
        char* env[] = {"GS_MARK=from-execle", "PATH=/bin:/usr/bin", NULL};
        execle("/bin/sh", "sh", "-c", "echo execle: $GS_MARK", (char*)NULL, env);
        return 9;
    }
    return 0;
}
