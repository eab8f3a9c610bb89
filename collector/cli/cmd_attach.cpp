// collector/cli/cmd_attach.cpp: `gpuspy attach PID`, recording a CUDA process that is already running, and
// `gpuspy attach --detach PID`. The shim does the recording inside the process (gpuspy_attach and
// gpuspy_detach, shim/attach.cpp); this command checks it may, injects the shim (collector/attach/inject.cpp),
// follows the shim's status file, and detaches at the end of the window.
#include "collector/attach/inject.h"
#include "collector/cli/cli.h"
#include "collector/cli/process_tree.h"
#include "collector/base/say.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy attach PID [-o FILE | --socket PATH] [--duration S]\n"
    "       gpuspy attach --detach PID\n"
    "\n"
    "Records a CUDA process that is already running, without restarting it (x86-64 Linux). gpuspy\n"
    "borrows one of its threads that is waiting (sleep, poll, a condition variable) for well under a\n"
    "millisecond to load libgpuspy.so, whose own thread then points the driver functions the process\n"
    "holds at gpuspy's wrappers. Ctrl-C, SIGTERM, --duration or `gpuspy attach --detach PID` ends the\n"
    "window: every pointer is put back and the capture is finished; the library stays loaded, and a\n"
    "later attach records a new window. The capture starts at the attach: allocations, modules and\n"
    "streams made before it are unknown (the capture says so).\n"
    "\n"
    "Needs the right to trace the process: the same user (and kernel.yama.ptrace_scope 0), or sudo /\n"
    "CAP_SYS_PTRACE. Where that is not possible, start the program with the preload instead.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   the capture, written by the process itself (default gpuspy-YYYYmmdd-HHMMSS.gspy\n"
    "                      here); never overwritten\n"
    "  --socket PATH       send the records to a running `gpuspy collect --socket PATH` instead\n"
    "  --duration S        detach after S seconds (default: at Ctrl-C or SIGTERM)\n"
    "  --detach            end the window of a process attached by another `gpuspy attach`\n"
    "  -h, --help          this text\n"
    "\n"
    "environment: GPUSPY_SHIM (the shim library)\n";

constexpr int kStatusWaitMs = 10000;
constexpr int kDetachWaitMs = 20000;

std::string readFile(const std::string& path) { return readFileNoInherit(path); }

// A "key=value" word of the shim's status line; -1 when absent.
long statusNumber(const std::string& line, const char* key)
{
    const std::string k = std::string(key) + "=";
    const size_t at = line.find(k);
    return at == std::string::npos ? -1 : std::strtol(line.c_str() + at + k.size(), nullptr, 10);
}

bool processGone(pid_t pid)
{
    const std::string stat = readFile(fmt::format("/proc/{}/stat", pid));
    const size_t paren = stat.rfind(')');
    return stat.empty() || (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

// The private folder the shim writes its status into (made the target's user's when we are root).
struct StatusDir {
    std::string dir;
    explicit StatusDir(pid_t pid)
    {
        char tmpl[] = "/tmp/gpuspy-attach-XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error(fmt::format("cannot make a folder in /tmp ({})", strerror(errno)));
        dir = tmpl;
        struct stat st{};
        if (geteuid() == 0 && stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0 && st.st_uid != 0 &&
            chown(dir.c_str(), st.st_uid, st.st_gid) != 0)
            throw std::runtime_error(fmt::format("cannot hand {} to uid {} ({})", dir, st.st_uid, strerror(errno)));
    }
    ~StatusDir()
    {
        unlink(path().c_str());
        unlink((path() + ".tmp").c_str());
        rmdir(dir.c_str());
    }
    std::string path() const { return dir + "/status"; }
};

// Waits, at most ms, for the status line to start with one of the words; the line, or "".
std::string waitStatus(const StatusDir& s, pid_t pid, std::initializer_list<const char*> words, int ms)
{
    for (int waited = 0; waited <= ms; waited += 20) {
        const std::string line = readFile(s.path());
        for (const char* w : words)
            if (line.rfind(w, 0) == 0) return line;
        if (processGone(pid)) return "";
        usleep(20000);
    }
    return "";
}

std::string shimPath()
{
    const std::string dir = exeDir();
    return locate("GPUSPY_SHIM", {dir + "/../lib/libgpuspy.so", dir + "/../lib/gpuspy/libgpuspy.so"}, "",
                  "the shim libgpuspy.so");
}

std::string absolutePath(const std::string& p)
{
    if (!p.empty() && p[0] == '/') return p;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) throw std::runtime_error("cannot read the current directory");
    return std::string(cwd) + "/" + p;
}

// Asks the shim in `pid` to detach and waits until it did; the exit status.
int detach(pid_t pid, const std::string& shim, const StatusDir& status, const std::string& what)
{
    const attach::CallResult r =
        attach::callEntry(pid, shim, RTLD_NOW | RTLD_NOLOAD, "gpuspy_detach", "status=" + status.path() + "\n");
    if (!r.ok) {
        if (r.error.find("dlopen") != std::string::npos)
            say("gpuspy attach: process {} has no gpuspy loaded: it was never attached\n", pid);
        else say("{}; process {} is still attached: `gpuspy attach --detach {}` ends it\n", r.error, pid, pid);
        return kExitFailure;
    }
    if (r.rc == 1) {
        say("gpuspy attach: process {} is not attached (detached already)\n", pid);
        return kExitFailure;
    }
    const std::string line = waitStatus(status, pid, {"detached"}, kDetachWaitMs);
    if (line.empty()) {
        say("gpuspy attach: process {} did not confirm its detach within {} s{}\n", pid, kDetachWaitMs / 1000,
            processGone(pid) ? " (it exited)" : "");
        return kExitFailure;
    }
    const long slots = statusNumber(line, "slots"), restored = statusNumber(line, "restored");
    say("gpuspy: detached from process {}: {} of {} driver pointers put back{}{}\n", pid, restored, slots,
        restored < slots ? " (the others were changed by the process meanwhile: left as it set them)" : "", what);
    return 0;
}

struct AttachOptions {
    pid_t pid = 0;
    std::string output, socket;
    long durationS = -1;
    bool detachOnly = false;
};

AttachOptions parse(int argc, char** argv, bool& help)
{
    ArgReader args("attach", argc, argv);
    AttachOptions o;
    std::string value, pid;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            help = true;
            return o;
        }
        if (args.value({"-o", "--output"}, o.output) || args.value({"--socket"}, o.socket)) continue;
        if (args.value({"--duration"}, value)) {
            o.durationS = parseNumber("--duration", value, 1, 365L * 86400);
            continue;
        }
        if (args.flag({"--detach"})) {
            o.detachOnly = true;
            continue;
        }
        if (args.isOption()) args.unknown();
        if (!pid.empty()) throw UsageError("gpuspy attach: one PID only");
        pid = args.positional();
    }
    if (pid.empty()) throw UsageError("gpuspy attach: which process? give its PID");
    o.pid = pid_t(parseNumber("PID", pid, 1, INT_MAX));
    if (!o.output.empty() && !o.socket.empty()) throw UsageError("gpuspy attach: -o and --socket exclude each other");
    if (o.detachOnly && (!o.output.empty() || !o.socket.empty() || o.durationS > 0))
        throw UsageError("gpuspy attach: --detach takes only the PID");
    return o;
}

double nowS()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

}  // namespace

int runAttach(int argc, char** argv)
{
    bool help = false;
    AttachOptions o = parse(argc, argv, help);
    if (help) {
        fmt::print("{}", kUsage);
        return 0;
    }
    if (const std::string why = attach::whyNotTraceable(o.pid); !why.empty()) {
        say("{}\n", why);
        return kExitFailure;
    }
    std::string shim;
    std::unique_ptr<StatusDir> status;
    try {
        shim = shimPath();
        status = std::make_unique<StatusDir>(o.pid);
        if (!o.detachOnly) {
            if (o.socket.empty()) {
                o.output = absolutePath(o.output.empty() ? defaultCaptureName() : o.output);
                struct stat st{};
                if (lstat(o.output.c_str(), &st) == 0)
                    throw std::runtime_error(fmt::format("{} exists; the process never overwrites a capture: choose "
                                                         "another name", o.output));
            } else {
                o.socket = absolutePath(o.socket);
            }
        }
    } catch (const std::exception& e) {
        say("gpuspy attach: {}\n", e.what());
        return kExitFailure;
    }
    if (o.detachOnly) return detach(o.pid, shim, *status, "");

    const std::string options = (o.socket.empty() ? "output=" + o.output : "socket=" + o.socket) +
                                "\nstatus=" + status->path() + "\n";
    const attach::CallResult r = attach::callEntry(o.pid, shim, RTLD_NOW, "gpuspy_attach", options);
    if (!r.ok) {
        say("{}\n", r.error);
        return kExitFailure;
    }
    if (r.rc == 1) {
        say("gpuspy attach: process {} is attached already (`gpuspy attach --detach {}` ends that)\n", o.pid, o.pid);
        return kExitFailure;
    }
    if (r.rc == 2) {
        say("gpuspy attach: process {} runs with gpuspy preloaded (LD_PRELOAD): it records already, where its "
            "GPUSPY_OUTPUT or GPUSPY_SOCKET says; nothing was changed\n", o.pid);
        return kExitFailure;
    }
    if (r.rc != 0) {
        say("gpuspy attach: the shim could not start its thread in process {}\n", o.pid);
        return kExitFailure;
    }
    // From here on Ctrl-C and SIGTERM end the window (they must not kill gpuspy with the process attached).
    int wake[2];
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) wake[0] = wake[1] = -1;
    installSignalHandlers(wake[1]);
    std::string line = waitStatus(*status, o.pid, {"attached", "failed"}, kStatusWaitMs);
    if (line.rfind("attached", 0) != 0) {
        say("gpuspy attach: process {} {}\n", o.pid,
            line.empty() ? "did not confirm the attach" : "could not start recording (GPUSPY_DISABLE=1?)");
        if (!line.empty() || !processGone(o.pid)) detach(o.pid, shim, *status, "");
        return kExitFailure;
    }
    const std::string where = o.socket.empty() ? o.output : "the collector at " + o.socket;
    const long slots = statusNumber(line, "slots");
    say("gpuspy: attached to process {} (thread {} held {:.2f} ms): {}; recording into {} ({})\n", o.pid, r.tid,
        r.stoppedMs,
        line.find("driver=loaded") != std::string::npos
            ? fmt::format("{} driver pointers swapped", slots)
            : std::string("CUDA is not initialised yet: its driver pointers are swapped when it is"),
        where, o.durationS > 0 ? fmt::format("for {} s", o.durationS) : std::string("Ctrl-C or SIGTERM ends it"));

    const double t0 = nowS();
    bool exited = false, detachedElsewhere = false;
    while (signalsReceived() == 0 && (o.durationS <= 0 || nowS() - t0 < double(o.durationS))) {
        pollfd p{wake[0], POLLIN, 0};
        poll(&p, wake[0] >= 0 ? 1 : 0, 200);
        char drain[64];
        while (wake[0] >= 0 && read(wake[0], drain, sizeof drain) > 0) {
        }
        hungUp();
        if (processGone(o.pid)) {
            exited = true;
            break;
        }
        const std::string now = readFile(status->path());
        if (now.rfind("detached", 0) == 0) {
            detachedElsewhere = true;
            break;
        }
        if (now != line && now.rfind("attached", 0) == 0) {
            say("gpuspy: process {}: {} driver pointers swapped now\n", o.pid, statusNumber(now, "slots"));
            line = now;
        }
    }
    restoreSignalHandlers();
    if (wake[0] >= 0) {
        close(wake[0]);
        close(wake[1]);
    }
    const std::string wrote = o.socket.empty() ? fmt::format("; wrote {} (gpuspy report {})", o.output, o.output) : "";
    if (exited) {
        say("gpuspy: process {} exited while attached; its capture ends there{}\n", o.pid, wrote);
        return 0;
    }
    if (detachedElsewhere) {
        say("gpuspy: process {} was detached by another gpuspy attach --detach{}\n", o.pid, wrote);
        return 0;
    }
    return detach(o.pid, shim, *status, wrote);
}

}  // namespace gpuspy::collect::cli
