// collector/attach/inject.cpp: the ptrace side of gpuspy attach. One thread of the target that sits in
// a restartable wait holds no lock of libc's or the loader's and has no live errno: it is stopped once,
// made to call dlopen and the entry point (on its own stack, below the red zone; return address 0,
// whose fault stops it again), then given back every register, its FPU/vector state, signal mask and
// errno; the kernel restarts its wait. Signals are blocked while it runs our calls: they stay pending
// and arrive after, as if the wait had gone on.
#include "collector/attach/inject.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpuspy::collect::attach {
namespace {
// Everything here is x86-64 Linux (registers, system call numbers); elsewhere attach says it is not supported.
#if defined(__x86_64__)

std::string readText(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A "Name:\tvalues" line of /proc/PID/status; empty when absent.
std::string statusField(const std::string& status, const std::string& name)
{
    std::istringstream in(status);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(name + ":", 0) == 0) return line.substr(name.size() + 1);
    return "";
}

bool haveCapSysPtrace()
{
    if (geteuid() == 0) return true;
    const std::string caps = statusField(readText("/proc/self/status"), "CapEff");
    return !caps.empty() && (std::stoull(caps, nullptr, 16) >> 19 & 1) != 0;  // CAP_SYS_PTRACE = 19
}

int ptraceScope()
{
    std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
    int scope = 0;
    return in >> scope ? scope : 0;  // no Yama: classic rules
}

const char kOr[] = "or start the program with the preload instead (README: \"Attach or preload\")";

// What the kernel's ptrace rules will say, as one line; `afterEperm`: the kernel said no already.
std::string permissionLine(pid_t pid, bool afterEperm)
{
    const bool cap = haveCapSysPtrace();
    const int scope = ptraceScope();
    if (scope == 3)
        return fmt::format("gpuspy attach: ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3, until "
                           "reboot); {}", kOr);
    if (scope == 2 && !cap)
        return fmt::format("gpuspy attach: only CAP_SYS_PTRACE may attach here (kernel.yama.ptrace_scope = 2): run it "
                           "with sudo, {}", kOr);
    const std::string status = readText(fmt::format("/proc/{}/status", pid));
    std::istringstream uids(statusField(status, "Uid"));
    unsigned real = 0, eff = 0, saved = 0;
    uids >> real >> eff >> saved;
    const unsigned me = unsigned(getuid());
    if (!cap && (real != me || eff != me || saved != me))
        return fmt::format("gpuspy attach: process {} runs as uid {}, gpuspy as uid {}: run gpuspy as that user or "
                           "with sudo (CAP_SYS_PTRACE), {}", pid, eff, me, kOr);
    // A process that is not dumpable refuses even its own user: its maps (and ptrace) need CAP_SYS_PTRACE.
    const int maps = open(fmt::format("/proc/{}/maps", pid).c_str(), O_RDONLY | O_CLOEXEC);
    const int mapsErr = errno;
    if (maps >= 0) close(maps);
    if (!cap && maps < 0 && mapsErr == EACCES)
        return fmt::format("gpuspy attach: process {} is not dumpable (setuid, or prctl(PR_SET_DUMPABLE, 0)): only "
                           "sudo (CAP_SYS_PTRACE) can attach to it, {}", pid, kOr);
    if (afterEperm && scope == 1 && !cap)
        return fmt::format("gpuspy attach: kernel.yama.ptrace_scope = 1 lets a process trace only its own "
                           "descendants: run gpuspy with sudo (or give it CAP_SYS_PTRACE), set the scope to 0 "
                           "(sysctl kernel.yama.ptrace_scope=0), {}", kOr);
    if (afterEperm)
        return fmt::format("gpuspy attach: the kernel does not let gpuspy trace process {} (EPERM): run it with "
                           "sudo, {}", pid, kOr);
    return "";
}

// ---- the target's address space
struct Mapping {
    uintptr_t base = 0;
    std::string path;
};

// The first mapping (file offset 0) of the object whose file name starts with `prefix`.
Mapping findObject(pid_t pid, const char* prefix)
{
    std::ifstream maps(pid ? fmt::format("/proc/{}/maps", pid) : std::string("/proc/self/maps"));
    for (std::string line; std::getline(maps, line);) {
        unsigned long lo = 0, off = 0;
        char perms[8] = "", path[4096] = "";
        if (sscanf(line.c_str(), "%lx-%*x %7s %lx %*s %*s %4095s", &lo, perms, &off, path) < 4 || off != 0) continue;
        const char* slash = strrchr(path, '/');
        if (slash && strncmp(slash + 1, prefix, strlen(prefix)) == 0) return {uintptr_t(lo), path};
    }
    return {};
}

bool sameFile(const std::string& a, const std::string& b)
{
    struct stat sa{}, sb{};
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// ---- choosing the thread
constexpr int kFutexWait = 0, kFutexWaitBitset = 9, kFutexCmdMask = 0x7f;

// 2: a wait nothing is held across (sleep, poll, select); 1: a futex wait (a condition variable, or a
// lock: a lock's waiter may hold another, so only when no thread sleeps the first way), or a timed wait
// the kernel resumed after an interruption (restart_syscall); 0: unsafe.
// epoll_wait is 0 on purpose: an interrupted epoll_wait returns EINTR to its caller, never restarts.
int waitRank(long nr, unsigned long arg2)
{
    switch (nr) {
    case SYS_clock_nanosleep: case SYS_nanosleep: case SYS_poll: case SYS_ppoll: case SYS_select:
    case SYS_pselect6: case SYS_pause: case SYS_wait4:
        return 2;
    case SYS_restart_syscall:  // a sleep the kernel goes on with after an interruption (what it was: unknown)
        return 1;
    case SYS_futex: {
        const int cmd = int(arg2 & kFutexCmdMask);
        return cmd == kFutexWait || cmd == kFutexWaitBitset ? 1 : 0;
    }
    default:
        return 0;
    }
}

// What the threads are doing, for the message when none can be borrowed: "TID:NR" (NR the system
// call, "running", or -1 blocked outside one), at most a few.
std::string threadStates(pid_t pid)
{
    std::string out;
    const std::string dir = fmt::format("/proc/{}/task", pid);
    DIR* d = opendir(dir.c_str());
    int n = 0;
    while (d && n < 8)
        if (dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            std::istringstream in(readText(dir + "/" + e->d_name + "/syscall"));
            std::string first = "?";
            in >> first;
            out += fmt::format("{}{}:{}", n++ ? " " : "", e->d_name, first);
        } else {
            break;
        }
    if (d) closedir(d);
    return out;
}

struct Waiter {
    pid_t tid;
    long nr;
    int rank;
};

std::vector<Waiter> waitingThreads(pid_t pid)
{
    std::vector<Waiter> out;
    const std::string dir = fmt::format("/proc/{}/task", pid);
    DIR* d = opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::istringstream in(readText(dir + "/" + e->d_name + "/syscall"));
        long nr = -1;
        std::string a1, a2;
        if (!(in >> nr) || nr < 0) continue;  // running, or not in a system call
        // Never gpuspy's own thread (an attach before: it waits on its condition variable).
        if (readText(dir + "/" + e->d_name + "/comm").rfind("gpuspy", 0) == 0) continue;
        in >> a1 >> a2;
        const int rank = waitRank(nr, a2.empty() ? 0 : std::stoul(a2, nullptr, 16));
        if (rank > 0) out.push_back({pid_t(atoi(e->d_name)), nr, rank});
    }
    closedir(d);
    std::stable_sort(out.begin(), out.end(), [](const Waiter& a, const Waiter& b) { return a.rank > b.rank; });
    return out;
}

constexpr double kFindWaiterMs = 3000;
constexpr int kMaxTries = 50;  // threads stopped that had just left their wait: each let go untouched
constexpr long kErestartSys = 512, kErestartNoIntr = 513, kErestartNoHand = 514, kErestartBlock = 516;

bool restarting(const user_regs_struct& r)
{
    const long err = -long(r.rax);
    return err == kErestartSys || err == kErestartNoIntr || err == kErestartNoHand || err == kErestartBlock;
}

double nowMs()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// A thread we hold stopped, and how to call functions on it.
class Borrowed {
public:
    explicit Borrowed(pid_t pid, pid_t tid) : m_pid(pid), m_tid(tid) {}
    ~Borrowed() { release(); }

    // Seizes the thread and stops it once; true when it stopped in the wait `nr`, restartable. Otherwise
    // it is let go at once, untouched (`why` says what happened).
    bool stopInWait(long nr, std::string& why)
    {
        if (ptrace(PTRACE_SEIZE, m_tid, nullptr, nullptr) != 0) {
            why = errno == EPERM ? permissionLine(m_pid, true)
                                 : fmt::format("gpuspy attach: cannot trace thread {} ({})", m_tid, strerror(errno));
            return false;
        }
        m_seized = true;
        if (ptrace(PTRACE_INTERRUPT, m_tid, nullptr, nullptr) != 0) {
            why = fmt::format("gpuspy attach: cannot stop thread {} ({})", m_tid, strerror(errno));
            return false;
        }
        m_t0 = nowMs();
        for (int signals = 0;; ++signals) {
            int st = 0;
            if (waitpid(m_tid, &st, __WALL) < 0) {
                if (errno == EINTR) continue;
                why = fmt::format("gpuspy attach: thread {} went away", m_tid);
                m_seized = false;
                return false;
            }
            if (WIFEXITED(st) || WIFSIGNALED(st)) {
                why = fmt::format("gpuspy attach: process {} exited", m_pid);
                m_seized = false;
                return false;
            }
            if (!WIFSTOPPED(st)) continue;
            if ((st >> 16) == PTRACE_EVENT_STOP) {
                if (WSTOPSIG(st) != SIGTRAP) {
                    why = fmt::format("gpuspy attach: process {} is stopped (job control): continue it first", m_pid);
                    return false;
                }
                break;  // our interrupt
            }
            // A signal on its way to the thread came first: it goes on as without us.
            if (signals > 64 || ptrace(PTRACE_CONT, m_tid, nullptr, reinterpret_cast<void*>(long(WSTOPSIG(st)))) != 0) {
                why = fmt::format("gpuspy attach: thread {} keeps receiving signals", m_tid);
                return false;
            }
        }
        m_stopped = true;
        if (ptrace(PTRACE_GETREGS, m_tid, nullptr, &m_regs) != 0) {
            why = fmt::format("gpuspy attach: cannot read thread {}'s registers ({})", m_tid, strerror(errno));
            return false;
        }
        if (long(m_regs.orig_rax) != nr || !restarting(m_regs)) {
            why = fmt::format("gpuspy attach: thread {} left its wait before it stopped", m_tid);
            return false;
        }
        // Everything else the calls may change: the FPU/vector state and the signal mask.
        m_xstate.resize(64 * 1024);
        iovec io{m_xstate.data(), m_xstate.size()};
        if (ptrace(PTRACE_GETREGSET, m_tid, reinterpret_cast<void*>(NT_X86_XSTATE), &io) != 0) {
            why = fmt::format("gpuspy attach: cannot read thread {}'s FPU/vector state ({})", m_tid, strerror(errno));
            return false;
        }
        m_xstate.resize(io.iov_len);
        if (ptrace(PTRACE_GETSIGMASK, m_tid, reinterpret_cast<void*>(sizeof m_mask), &m_mask) != 0) {
            why = fmt::format("gpuspy attach: cannot read thread {}'s signal mask ({})", m_tid, strerror(errno));
            return false;
        }
        uint64_t all = ~uint64_t(0);
        if (ptrace(PTRACE_SETSIGMASK, m_tid, reinterpret_cast<void*>(sizeof all), &all) != 0) {
            why = fmt::format("gpuspy attach: cannot block thread {}'s signals ({})", m_tid, strerror(errno));
            return false;
        }
        m_maskChanged = true;
        m_mem = open(fmt::format("/proc/{}/mem", m_pid).c_str(), O_RDWR | O_CLOEXEC);
        if (m_mem < 0) {
            why = fmt::format("gpuspy attach: cannot open process {}'s memory ({})", m_pid, strerror(errno));
            return false;
        }
        return true;
    }

    // fn(a1, a2) on the thread; false (why set) when the call did not come back to us.
    bool call(uintptr_t fn, uintptr_t a1, uintptr_t a2, uintptr_t& result, std::string& why)
    {
        user_regs_struct r = m_regs;
        uintptr_t sp = scratchTop() - 64;  // below the strings written by put()
        sp &= ~uintptr_t(15);
        sp -= 8;  // the return address: rsp % 16 == 8 at entry, as after a call
        const uint64_t zero = 0;
        if (!write(sp, &zero, 8)) {
            why = "gpuspy attach: cannot write the call frame";
            return false;
        }
        r.rsp = sp;
        r.rip = fn;
        r.rdi = a1;
        r.rsi = a2;
        r.rax = 0;
        r.orig_rax = uint64_t(-1);  // not in a system call now: no restart when it resumes
        r.eflags &= ~uint64_t(0x400);  // the ABI's direction flag clear
        m_dirty = true;
        if (ptrace(PTRACE_SETREGS, m_tid, nullptr, &r) != 0 || ptrace(PTRACE_CONT, m_tid, nullptr, nullptr) != 0) {
            why = fmt::format("gpuspy attach: cannot start the call ({})", strerror(errno));
            return false;
        }
        for (;;) {
            int st = 0;
            if (waitpid(m_tid, &st, __WALL) < 0) {
                if (errno == EINTR) continue;
                why = "gpuspy attach: the thread went away during the call";
                m_seized = m_stopped = false;
                return false;
            }
            if (WIFEXITED(st) || WIFSIGNALED(st)) {
                why = fmt::format("gpuspy attach: process {} exited during the call", m_pid);
                m_seized = m_stopped = false;
                return false;
            }
            if (!WIFSTOPPED(st)) continue;
            if ((st >> 16) == PTRACE_EVENT_STOP || WSTOPSIG(st) != SIGSEGV) {
                // A group stop, or a signal forced through the blocked mask: continue, the call goes on.
                ptrace(PTRACE_CONT, m_tid, nullptr, nullptr);
                continue;
            }
            user_regs_struct after{};
            ptrace(PTRACE_GETREGS, m_tid, nullptr, &after);
            if (after.rip != 0) {
                why = fmt::format("gpuspy attach: the call faulted in process {} at {:#x}", m_pid, after.rip);
                return false;
            }
            result = after.rax;
            return true;  // the SIGSEGV of our return is never delivered (the next resume passes 0)
        }
    }

    // Copies bytes below the red zone for the calls to read; their address.
    uintptr_t put(const void* data, size_t n)
    {
        m_scratchUsed += (n + 15) & ~size_t(15);
        const uintptr_t at = scratchBase() - m_scratchUsed;
        return write(at, data, n) ? at : 0;
    }

    bool read(uintptr_t at, void* out, size_t n) { return pread(m_mem, out, n, off_t(at)) == ssize_t(n); }
    bool write(uintptr_t at, const void* data, size_t n) { return pwrite(m_mem, data, n, off_t(at)) == ssize_t(n); }

    // Everything back as it was, then the thread goes on (its wait restarts). False: not all of it.
    bool release()
    {
        bool ok = true;
        if (m_stopped) {
            if (m_dirty && !m_xstate.empty()) {
                iovec io{m_xstate.data(), m_xstate.size()};
                ok &= ptrace(PTRACE_SETREGSET, m_tid, reinterpret_cast<void*>(NT_X86_XSTATE), &io) == 0;
            }
            if (m_dirty) ok &= ptrace(PTRACE_SETREGS, m_tid, nullptr, &m_regs) == 0;
            if (m_maskChanged) ok &= ptrace(PTRACE_SETSIGMASK, m_tid, reinterpret_cast<void*>(sizeof m_mask), &m_mask) == 0;
        }
        if (m_seized) ok &= ptrace(PTRACE_DETACH, m_tid, nullptr, nullptr) == 0;
        if (m_mem >= 0) close(m_mem);
        m_mem = -1;
        m_seized = m_stopped = m_dirty = m_maskChanged = false;
        return ok;
    }

    pid_t tid() const { return m_tid; }
    double stoppedMs() const { return nowMs() - m_t0; }

private:
    static constexpr uintptr_t kRedZone = 128;
    static constexpr uintptr_t kScratch = 8192;
    uintptr_t scratchBase() const { return (m_regs.rsp - kRedZone) & ~uintptr_t(15); }
    uintptr_t scratchTop() const { return scratchBase() - kScratch; }

    pid_t m_pid;
    pid_t m_tid;
    user_regs_struct m_regs{};
    std::vector<uint8_t> m_xstate;
    uint64_t m_mask = 0;
    int m_mem = -1;
    size_t m_scratchUsed = 0;
    double m_t0 = 0;
    bool m_seized = false, m_stopped = false, m_dirty = false, m_maskChanged = false;
};

// The address in the target of one of our libc's functions (the same libc file, checked by the caller).
uintptr_t inTarget(const Mapping& ours, const Mapping& theirs, const char* name)
{
    void* p = dlsym(RTLD_DEFAULT, name);
    return p ? theirs.base + (uintptr_t(p) - ours.base) : 0;
}

#endif  // __x86_64__
}  // namespace

std::string whyNotTraceable(pid_t pid)
{
#if !defined(__x86_64__)
    (void)pid;
    return "gpuspy attach: supported on x86-64 Linux only; start the program with the preload instead";
#else
    if (pid <= 0 || pid == getpid()) return fmt::format("gpuspy attach: {} is not a process gpuspy can attach to", pid);
    const std::string status = readText(fmt::format("/proc/{}/status", pid));
    if (status.empty()) return fmt::format("gpuspy attach: no process {}", pid);
    const std::string tracer = statusField(status, "TracerPid");
    if (!tracer.empty() && std::stol(tracer) != 0)
        return fmt::format("gpuspy attach: process {} is traced already (by process {}, a debugger?): detach it first",
                           pid, std::stol(tracer));
    std::string line = permissionLine(pid, false);
    if (!line.empty()) return line;
    std::ifstream exe(fmt::format("/proc/{}/exe", pid), std::ios::binary);
    char ident[EI_NIDENT] = {};
    if (exe.read(ident, sizeof ident) && memcmp(ident, ELFMAG, SELFMAG) == 0 && ident[EI_CLASS] != ELFCLASS64)
        return fmt::format("gpuspy attach: process {} is a 32-bit program; gpuspy supports x86-64 only", pid);
    return "";
#endif
}

CallResult callEntry(pid_t pid, const std::string& library, int dlopenFlags, const char* entry,
                     const std::string& argument)
{
    CallResult out;
#if !defined(__x86_64__)
    (void)pid, (void)library, (void)dlopenFlags, (void)entry, (void)argument;
    out.error = "gpuspy attach: supported on x86-64 Linux only; start the program with the preload instead";
    return out;
#else
    // dlopen, dlsym and friends at our libc's offsets, in the same libc file mapped in the target.
    const Mapping ourLibc = findObject(0, "libc.so");
    const Mapping theirLibc = findObject(pid, "libc.so");
    if (!ourLibc.base || !theirLibc.base) {
        out.error = fmt::format("gpuspy attach: no C library mapped in process {} (a static program, or one still starting?)", pid);
        return out;
    }
    if (!sameFile(ourLibc.path, fmt::format("/proc/{}/root{}", pid, theirLibc.path))) {
        out.error = fmt::format("gpuspy attach: process {} uses another C library ({}) than gpuspy ({}); a container? "
                                "run gpuspy inside it, or use the preload", pid, theirLibc.path, ourLibc.path);
        return out;
    }
    Dl_info info{};
    if (!dladdr(dlsym(RTLD_DEFAULT, "dlopen"), &info) || !info.dli_fname || !sameFile(info.dli_fname, ourLibc.path)) {
        out.error = "gpuspy attach: this C library keeps dlopen outside libc.so (glibc older than 2.34): unsupported";
        return out;
    }
    if (!sameFile(library, fmt::format("/proc/{}/root{}", pid, library))) {
        out.error = fmt::format("gpuspy attach: {} is not visible to process {} (another mount namespace?)", library, pid);
        return out;
    }
    const uintptr_t fDlopen = inTarget(ourLibc, theirLibc, "dlopen");
    const uintptr_t fDlsym = inTarget(ourLibc, theirLibc, "dlsym");
    const uintptr_t fDlerror = inTarget(ourLibc, theirLibc, "dlerror");
    const uintptr_t fErrno = inTarget(ourLibc, theirLibc, "__errno_location");

    // A busy process passes through its waits between bursts: look (reading /proc changes nothing) for
    // a while. A thread seen waiting that has left its wait when it stops is let go untouched, and
    // another is looked for.
    std::string why;
    int tries = 0;
    for (const double t0 = nowMs(); nowMs() - t0 < kFindWaiterMs && tries < kMaxTries; usleep(5000)) {
        for (const Waiter& w : waitingThreads(pid)) {
            ++tries;
            Borrowed t(pid, w.tid);
            why.clear();
            if (!t.stopInWait(w.nr, why)) {
                if (!t.release()) {
                    out.error = fmt::format("gpuspy attach: thread {} of process {} could not be let go cleanly", w.tid, pid);
                    return out;
                }
                if (why.find("left its wait") == std::string::npos) {
                    out.error = why;  // refused, or the process is gone or stopped: no other thread does better
                    return out;
                }
                continue;
            }
            out.tid = w.tid;
            uintptr_t errnoAt = 0, handle = 0, fn = 0, rc = 0;
            int savedErrno = 0;
            const uintptr_t libArg = t.put(library.c_str(), library.size() + 1);
            const uintptr_t entryArg = t.put(entry, strlen(entry) + 1);
            const uintptr_t arg = t.put(argument.c_str(), argument.size() + 1);
            bool ok = libArg && entryArg && arg && t.call(fErrno, 0, 0, errnoAt, why) &&
                      t.read(errnoAt, &savedErrno, sizeof savedErrno);
            if (ok && (!t.call(fDlopen, libArg, uintptr_t(dlopenFlags), handle, why) || !handle)) {
                uintptr_t msg = 0;
                char text[512] = {};
                if (why.empty() && t.call(fDlerror, 0, 0, msg, why) && msg) t.read(msg, text, sizeof text - 1);
                if (why.empty()) why = fmt::format("gpuspy attach: dlopen({}) failed in process {}: {}", library, pid, text);
                ok = false;
            }
            if (ok && (!t.call(fDlsym, handle, entryArg, fn, why) || !fn)) {
                if (why.empty()) why = fmt::format("gpuspy attach: {} has no {}", library, entry);
                ok = false;
            }
            if (ok) ok = t.call(fn, arg, 0, rc, why);
            if (errnoAt) t.write(errnoAt, &savedErrno, sizeof savedErrno);
            out.stoppedMs = t.stoppedMs();
            if (!t.release()) {
                out.error = fmt::format("gpuspy attach: thread {} of process {} could not be restored exactly", w.tid, pid);
                return out;
            }
            out.ok = ok;
            out.rc = long(int(rc));
            if (!ok) out.error = why;
            return out;
        }
    }
    out.error = fmt::format("gpuspy attach: no thread of process {} waits in a restartable system call now (sleep, "
                            "poll, select, a condition variable; never epoll_wait, whose caller would see EINTR); "
                            "nothing was changed: try again when it idles, or use the preload (threads: {})", pid,
                            threadStates(pid));
    return out;
#endif
}

}  // namespace gpuspy::collect::attach
