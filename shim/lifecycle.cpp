// shim/lifecycle.cpp: the exit paths that atexit never sees: fatal signals (SIGTERM, SIGINT,
// SIGSEGV, SIGBUS, SIGABRT) and quick_exit (_exit and exec are interposed in preload.cpp). Each
// writes out what was recorded, with a short time limit, from an async-signal-safe path (atomics and
// nanosleep: the drain thread does the writing), and then does exactly what would have happened
// without gpuspy: the app's own handler runs, or the default action, with the same exit status.
#include "shim/shim.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {
namespace {

constexpr uint64_t kSignalFlushNs = 500000000ull;  // a dying process is given half a second at most
constexpr uint64_t kQuickExitFlushNs = 1000000000ull;
constexpr int kExitSignal = 1;  // wire::EndBody::exitReason

const int kSignals[] = {SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT};
struct sigaction g_previous[NSIG];
bool g_installed[NSIG];

bool isFault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

void onSignal(int sig, siginfo_t* info, void* context)
{
    const int savedErrno = errno;
    const struct sigaction& prev = g_previous[sig];
    const bool appHandler = (prev.sa_flags & SA_SIGINFO) ? prev.sa_sigaction != nullptr
                                                         : prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
    if (appHandler) {
        // The app's handler decides whether the process lives on: write out what we have and keep
        // recording. If it ends the process (_exit, abort), that path ends the stream.
        flushRecording(kSignalFlushNs);
        errno = savedErrno;
        if (prev.sa_flags & SA_SIGINFO) prev.sa_sigaction(sig, info, context);
        else prev.sa_handler(sig);
        if (prev.sa_flags & SA_RESETHAND) {
            struct sigaction dfl{};
            dfl.sa_handler = SIG_DFL;
            sigaction(sig, &dfl, nullptr);
        }
        errno = savedErrno;
        return;
    }
    // The default action ends the process: end the stream, then let that happen as without us.
    stopRecording(kSignalFlushNs, true, kExitSignal);
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    errno = savedErrno;
    // A real fault happens again when the instruction reruns, now with the default action; any other
    // signal is sent again, pending until this handler returns (it is blocked while we run).
    if (isFault(sig) && info && info->si_code > 0) return;
    syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig);
}

void onQuickExit()
{
    stopRecording(kQuickExitFlushNs, true, 0);
}

}  // namespace

void installExitPaths()
{
    for (int sig : kSignals) {
        struct sigaction old{};
        if (sigaction(sig, nullptr, &old) != 0) continue;
        // An ignored signal stays ignored: nothing dies, nothing to flush.
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
        g_previous[sig] = old;
        struct sigaction sa{};
        sa.sa_sigaction = onSignal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | (old.sa_flags & SA_RESTART);
        sa.sa_mask = old.sa_mask;
        if (sigaction(sig, &sa, nullptr) == 0) g_installed[sig] = true;
    }
    at_quick_exit(onQuickExit);
}

}  // namespace gpuspy::shim
