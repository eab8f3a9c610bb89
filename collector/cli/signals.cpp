// collector/cli/signals.cpp: the signals of `record` and `collect`: what stops them (SIGINT, SIGTERM),
// what they pass on to the command, what they survive (SIGHUP, SIGPIPE, SIGXFSZ), and the dispositions
// the command gets (those gpuspy inherited).
#include "collector/cli/cli.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace gpuspy::collect::cli {

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_wakeFd = -1;
volatile sig_atomic_t g_signals = 0;
volatile sig_atomic_t g_hangups = 0;
volatile sig_atomic_t g_lastSignal = 0;

// The signals whose disposition gpuspy changes, and whether each was ignored when gpuspy started: an
// ignored one (nohup, a shell's background job) is ignored again in the command, as if gpuspy were
// not there. gpuspy itself still stops on SIGINT and SIGTERM: they are how `collect` is finished,
// also when it was started in the background of a script (where SIGINT comes ignored).
constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ, SIGCHLD};
bool g_inheritedIgnore[NSIG] = {};
// Standard output and error were terminals at start: after a hang-up they are dead ends (EIO), so
// they become /dev/null and the capture is still finished (writes there would fail or throw).
bool g_wasTerminal[3] = {};
unsigned g_hangupsSeen = 0;
bool g_sessionLeader = false;
sigset_t g_inheritedMask;

void wakePoll()
{
    if (g_wakeFd >= 0) {
        const char b = 1;
        [[maybe_unused]] ssize_t r = write(g_wakeFd, &b, 1);
    }
}

void onStopSignal(int sig, siginfo_t* info, void*)
{
    const int savedErrno = errno;
    g_signals = g_signals + 1;
    g_lastSignal = sig;
    const pid_t child = g_child;
    if (child > 0 && info->si_code != SI_KERNEL) kill(child, sig);
    wakePoll();
    errno = savedErrno;
}

// SIGHUP (an ssh session or terminal that went away) does not stop gpuspy: `record` goes on until its
// command ends, `collect` goes on collecting. The command gets the hang-up it would get without gpuspy:
// one sent with kill is passed on; of the kernel's, the terminal's hang-up goes to the session leader
// alone (passed on when that is gpuspy, as `ssh host gpuspy record ...` makes it), and the one that
// follows the leader's exit goes to the foreground group, the command's included.
void onHangup(int sig, siginfo_t* info, void*)
{
    const int savedErrno = errno;
    g_hangups = g_hangups + 1;
    const pid_t child = g_child;
    if (child > 0 && (info->si_code != SI_KERNEL || g_sessionLeader)) kill(child, sig);
    wakePoll();
    errno = savedErrno;
}

void onChild(int)
{
    const int savedErrno = errno;
    wakePoll();
    errno = savedErrno;
}

void install(int sig, void (*action)(int, siginfo_t*, void*))
{
    struct sigaction sa{};
    sa.sa_sigaction = action;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
}

}  // namespace

void installSignalHandlers(int wakeFd)
{
    g_wakeFd = wakeFd;
    sigprocmask(SIG_SETMASK, nullptr, &g_inheritedMask);
    for (int sig : kHandled) {
        struct sigaction old{};
        g_inheritedIgnore[sig] = sigaction(sig, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
                                 old.sa_handler == SIG_IGN;
    }
    for (int fd = 1; fd <= 2; ++fd) g_wasTerminal[fd] = isatty(fd);
    g_sessionLeader = getsid(0) == getpid();
    install(SIGINT, onStopSignal);
    install(SIGTERM, onStopSignal);
    install(SIGHUP, onHangup);
    // A reader of the report that went away, or a file size limit (RLIMIT_FSIZE): a failed write
    // (EPIPE, EFBIG) that gpuspy handles, not a signal that kills it before the capture is finished.
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    struct sigaction sc{};
    sc.sa_handler = onChild;
    sc.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, nullptr);
}

void childSignalDispositions()
{
    for (int sig : kHandled) signal(sig, g_inheritedIgnore[sig] ? SIG_IGN : SIG_DFL);
    sigprocmask(SIG_SETMASK, &g_inheritedMask, nullptr);
}

void forwardSignalsTo(pid_t pid)
{
    g_child = pid;
}

unsigned signalsReceived()
{
    return unsigned(g_signals);
}

int lastSignal()
{
    return g_lastSignal;
}

bool hungUp()
{
    const unsigned n = unsigned(g_hangups);
    if (n == g_hangupsSeen) return n > 0;
    g_hangupsSeen = n;
    // The terminal is gone: what gpuspy would print there goes nowhere instead of failing.
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        std::fflush(stdout);
        std::fflush(stderr);
        for (int fd = 1; fd <= 2; ++fd)
            if (g_wasTerminal[fd]) dup2(null, fd);
        close(null);
    }
    return true;
}

void restoreSignalHandlers()
{
    g_child = 0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    // A hang-up after this point must not kill gpuspy before it has finished the capture.
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    g_wakeFd = -1;
}

}  // namespace gpuspy::collect::cli
