// shim/lifecycle.cpp: the exit paths that atexit never sees: signals whose default action ends the
// process (SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, ...) and
// quick_exit (_exit and exec are interposed in preload.cpp). Without an app handler, each writes out
// what was recorded, with a short time limit, from an async-signal-safe path (atomics and nanosleep:
// the drain thread does the writing, and gives up on a collector that does not read), then the
// default action happens, with the same wait status. The app's own handler runs at once. A signal that
// arrives while the process is already ending, during gpuspy's flush of that end, waits for the flush
// and lets the end under way finish with its own status (without gpuspy it would have found no process);
// one sent from outside (a supervisor, a timer) does not run the app's handler either, so the flush
// never widens the window in which such a signal changes how the process ends.
// The app may change those handlers after ours went in (sigaction and signal are interposed in
// preload.cpp): it sees its own handlers, and ours stays in front of them.
#include "shim/shim.h"

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {
namespace {

constexpr uint64_t kSignalFlushNs = 500000000ull;  // a dying process is given half a second at most
constexpr uint64_t kQuickExitFlushNs = 1000000000ull;
// A signal that finds an exit flush under way waits for it at most this long (the longest flush limit,
// atexit's 2 s, and a little).
constexpr uint64_t kAwaitExitFlushNs = 2500000000ull;
constexpr int kExitSignal = 1;  // wire::EndBody::exitReason

// Every signal whose default action ends the process (SIGKILL and SIGSTOP aside, which cannot be
// caught; SIGTRAP is a debugger's).
const int kSignals[] = {SIGTERM, SIGINT,  SIGSEGV, SIGBUS,  SIGABRT,   SIGFPE,  SIGILL, SIGHUP, SIGPIPE, SIGQUIT,
                        SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGSYS};
// What the app has installed (or would have, had we not been in front) for each signal we handle.
struct sigaction g_previous[NSIG];
// Our handler is installed for this signal. An app that ignores the signal gets SIG_IGN for real.
bool g_installed[NSIG];
bool g_pathsInstalled = false;  // installExitPaths ran: the app's new handlers go behind ours
// The app's sigaction path is not instrumented: a sanitizer runtime preloaded first installs its own
// handlers through it while it starts, before instrumented code may run.
// (Hence __atomic builtins on plain variables there: std::atomic's members may be instrumented calls.)
// Serialises the app's sigaction calls with ours. A spin lock that knows its owner: sigaction is
// async-signal-safe, and a handler that calls it on a thread already inside must not wait for itself.
pid_t g_actionOwner = 0;

struct ActionLock {
    bool held = false;
    GS_UNINSTRUMENTED ActionLock()
    {
        const pid_t self = pid_t(syscall(SYS_gettid));
        if (__atomic_load_n(&g_actionOwner, __ATOMIC_ACQUIRE) == self) return;
        for (;;) {
            pid_t none = 0;
            if (__atomic_compare_exchange_n(&g_actionOwner, &none, self, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) break;
            sched_yield();
        }
        held = true;
    }
    GS_UNINSTRUMENTED ~ActionLock()
    {
        if (held) __atomic_store_n(&g_actionOwner, 0, __ATOMIC_RELEASE);
    }
};

SigactionFn g_realSigaction = nullptr;

bool isFault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

// Sent from outside the process's own course: by another process (kill, sigqueue), by a timer or the
// kernel at a time of its own (alarm, a CPU limit), or by one of the app's threads to the whole process
// (a watchdog's kill(getpid(), SIGTERM)), as a supervisor would. Not a fault, a seccomp trap, a signal
// sent to one thread of this process (raise, abort, pthread_kill: a runtime's stop-the-world, whose
// sender waits for the handler), or a write's SIGPIPE or SIGXFSZ: those are the app's own doing, which
// goes on whatever gpuspy does.
bool fromOutside(int sig, const siginfo_t* info)
{
    if (!info) return false;
    if (info->si_code > 0) return !isFault(sig) && sig != SIGSYS;  // SI_KERNEL, POLL_*: the kernel's timing
    const bool self = info->si_pid == pid_t(syscall(SYS_getpid));
    if (info->si_code == SI_TKILL) return !self;
    if (info->si_code == SI_USER || info->si_code == SI_QUEUE)
        return !self || (sig != SIGPIPE && sig != SIGXFSZ);  // the kernel sends these two as SI_USER
    return true;  // SI_TIMER, SI_MESGQ, SI_ASYNCIO, SI_SIGIO: at a time of their own
}

GS_UNINSTRUMENTED bool handled(int sig)
{
    for (int s : kSignals)
        if (s == sig) return true;
    return false;
}

GS_UNINSTRUMENTED bool isIgnore(const struct sigaction& a) { return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN; }

void onSignal(int sig, siginfo_t* info, void* context);

// Ours, in front of `app`: the app's mask and its restart/nodefer choices, so that system calls and
// nested signals behave as they would with the app's handler alone.
GS_UNINSTRUMENTED struct sigaction ourAction(const struct sigaction& app)
{
    struct sigaction sa{};
    sa.sa_sigaction = onSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | (app.sa_flags & (SA_RESTART | SA_NODEFER));
    sa.sa_mask = app.sa_mask;
    return sa;
}

void setDefault(int sig)
{
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    __atomic_store_n(&g_installed[sig], false, __ATOMIC_RELEASE);
    g_realSigaction(sig, &dfl, nullptr);
}

void onSignal(int sig, siginfo_t* info, void* context)
{
    const int savedErrno = errno;
    const struct sigaction prev = g_previous[sig];
    const bool appHandler = (prev.sa_flags & SA_SIGINFO) ? prev.sa_sigaction != nullptr
                                                         : prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
    if (isIgnore(prev)) return;  // ignored since our handler went in (a race with the app's sigaction)
    if (appHandler && fromOutside(sig, info) && awaitStopUnderWay(kAwaitExitFlushNs) == StopFor::Ending) {
        // The process was already ending, and gpuspy's flush of that end was under way: without gpuspy
        // it would have been gone (or further on) when this signal came. Had the handler run now, it
        // could end the process its own way (a shutdown handler's _exit(1)) in a window gpuspy opened.
        // It waited for the flush; the end under way goes on. Once the flush is over, a signal finds
        // the rest of the end as it would without gpuspy.
        errno = savedErrno;
        return;
    }
    if (appHandler) {
        // The app's handler decides whether the process lives on, and runs at once: a runtime that
        // takes SIGSEGV in normal operation (guard pages) must not wait for gpuspy's writing. The drain
        // thread is only woken to write what we have; if the handler ends the process (_exit, abort,
        // re-raising with the default action), that path ends the stream, within its time limit.
        // SA_RESETHAND: the kernel would have reset the action before the handler.
        if (prev.sa_flags & SA_RESETHAND) {
            g_previous[sig] = {};
            g_previous[sig].sa_handler = SIG_DFL;
        }
        drainWake();
        errno = savedErrno;
        if (prev.sa_flags & SA_SIGINFO) prev.sa_sigaction(sig, info, context);
        else prev.sa_handler(sig);
        errno = savedErrno;
        return;
    }
    // The default action ends the process: end the stream, then let that happen as without us.
    if (!stopRecording(kSignalFlushNs, true, kExitSignal, StopFor::Ending) &&
        awaitStopUnderWay(kAwaitExitFlushNs) == StopFor::Ending) {
        // The process was already ending (exit, _exit, quick_exit, another fatal signal) and gpuspy's
        // flush of that end was under way: without gpuspy it would be gone by now, and this signal
        // would have found no process. It waited for the flush; the end already under way goes on,
        // with the status the app gave it.
        errno = savedErrno;
        return;
    }
    setDefault(sig);
    errno = savedErrno;
    // A real fault happens again when the instruction reruns, now with the default action; any other
    // signal is sent again, pending until this handler returns (it is blocked while we run).
    if (isFault(sig) && info && info->si_code > 0) return;
    syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig);
}

void onQuickExit()
{
    stopRecording(kQuickExitFlushNs, true, 0, StopFor::Ending);
}

}  // namespace

GS_UNINSTRUMENTED SigactionFn realSigaction()
{
    if (!g_realSigaction) {
        // The next definition after ours (libc's; a sanitizer runtime preloaded first intercepts
        // before us). dlvsym, not dlsym: ours is interposed.
        void* p = dlvsym(RTLD_NEXT, "sigaction", "GLIBC_2.2.5");
        g_realSigaction = reinterpret_cast<SigactionFn>(p ? p : dlvsym(RTLD_DEFAULT, "__sigaction", "GLIBC_2.2.5"));
    }
    return g_realSigaction;
}

GS_UNINSTRUMENTED int appSigaction(int sig, const struct sigaction* act, struct sigaction* old)
{
    SigactionFn real = realSigaction();
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (sig <= 0 || sig >= NSIG || !handled(sig)) return real(sig, act, old);
    ActionLock lock;
    const bool installed = __atomic_load_n(&g_installed[sig], __ATOMIC_ACQUIRE);
    // Ours goes (back) in front of any handler or default action the app installs once the exit paths
    // are set up; an ignored signal is ignored for real (nothing dies of it, nothing to flush).
    const bool front = __atomic_load_n(&g_pathsInstalled, __ATOMIC_ACQUIRE) && act && !isIgnore(*act);
    if (!installed && !front) return real(sig, act, old);
    struct sigaction prev = g_previous[sig];
    if (!installed && real(sig, nullptr, &prev) != 0) return -1;
    int rc = 0;
    if (act) {
        const struct sigaction ours = ourAction(*act);
        rc = real(sig, front ? &ours : act, nullptr);
        if (rc == 0) {
            g_previous[sig] = *act;
            __atomic_store_n(&g_installed[sig], front, __ATOMIC_RELEASE);
        }
    }
    if (rc == 0 && old) *old = prev;
    return rc;
}

void installExitPaths()
{
    SigactionFn real = realSigaction();
    if (real) {
        ActionLock lock;
        for (int sig : kSignals) {
            struct sigaction old{};
            if (real(sig, nullptr, &old) != 0) continue;
            // An ignored signal stays ignored: nothing dies, nothing to flush.
            if (isIgnore(old)) continue;
            g_previous[sig] = old;
            const struct sigaction sa = ourAction(old);
            if (real(sig, &sa, nullptr) == 0) __atomic_store_n(&g_installed[sig], true, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&g_pathsInstalled, true, __ATOMIC_RELEASE);
    }
    at_quick_exit(onQuickExit);
}

}  // namespace gpuspy::shim
