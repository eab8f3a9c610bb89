// collector/cli/cmd_record.cpp: `gpuspy record -- CMD`, run a program tree under the shim and collect it.
#include "collector/cli/cli.h"
#include "collector/cli/process_tree.h"
#include "collector/cli/process_watch.h"
#include "collector/base/say.h"
#include "collector/live/server.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

extern char** environ;

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy record [-o FILE] [-f] [--sim] [--repeat N] [--stack-depth N] [--no-gpu-time] [--format F]\n"
    "                     [--capture-range cudaProfilerApi|nvtx:NAME[@DOMAIN]] [--capture-range-end stop|repeat[:N]]\n"
    "                     [--delay S] [--duration S] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD with gpuspy's shim preloaded, collects every process of its tree (forked and exec'd\n"
    "children included) on a private socket, writes the capture as the records arrive, then prints\n"
    "its report (what `gpuspy report FILE` prints). The exit status is CMD's (128+N if a signal N\n"
    "killed it). SIGINT, SIGTERM and SIGHUP sent to gpuspy go to CMD; a hang-up does not stop gpuspy,\n"
    "and signals gpuspy's parent ignored stay ignored in CMD. When CMD exits, gpuspy waits for its\n"
    "descendants that still have the shim loaded (a daemon, a late worker: Ctrl-C stops waiting).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   the capture (default gpuspy-YYYYmmdd-HHMMSS.gspy); created 0600. %h: the host\n"
    "                      name, %q{VAR}: VAR's value (empty when unset), %p: gpuspy's pid (as nsys)\n"
    "  -f, --force         overwrite FILE if it exists\n"
    "  --sim               run CMD on the simulated GPU (gpuspy's simcuda libcuda.so.1)\n"
    "  --repeat N          run CMD N times (1-1000), one after the other, into the one capture: the report\n"
    "                      gives each figure's median and spread over the runs, and `gpuspy diff` calls a\n"
    "                      change inside the runs' spread noise. The exit status is the first failing\n"
    "                      run's (else 0); Ctrl-C or a run that cannot be waited for ends the repeats\n"
    "  --stack-depth N     host stack frames recorded per call (0-128)\n"
    "  --no-gpu-time       do not time GPU work with CUDA events (host times only)\n"
    "  --format F          the report: text (default), json or csv\n"
    "  --capture-range R   record only inside windows: cudaProfilerApi (between cu(da)ProfilerStart and\n"
    "                      Stop, any thread) or nvtx:NAME[@DOMAIN] (while that NVTX range is open);\n"
    "                      calls outside are counted, not recorded (the report says how many)\n"
    "  --capture-range-end stop (default: the first window only), repeat (every range is a window),\n"
    "                      repeat:N (the first N)\n"
    "  --delay S           no window opens in the first S seconds (without --capture-range: recording\n"
    "                      starts S seconds after CMD started)\n"
    "  --duration S        a window closes S seconds after it opened at the latest\n"
    "  -h, --help          this text\n"
    "\n"
    "environment: GPUSPY_SHIM (the shim library), GPUSPY_SIMCUDA_DIR (the simulated driver's directory)\n";

constexpr uint64_t kQuietNs = 200'000'000;        // after the last process left: none still starting?
constexpr uint64_t kStragglerNoteNs = 2'000'000'000;
constexpr uint64_t kScanIntervalNs = 250'000'000;  // how often /proc is read for descendants

std::string prepend(const char* name, const std::string& first)
{
    const char* old = std::getenv(name);
    return old && *old ? first + ":" + old : first;
}

struct RecordOptions {
    std::string output;
    bool force = false;
    bool sim = false;
    long repeat = 1;
    long stackDepth = -1;
    bool noGpuTime = false;
    std::string format = "text";
    std::string captureRange, captureEnd, delay, duration;
    std::vector<std::string> command;
};

// --capture-range: cudaProfilerApi or nvtx:NAME[@DOMAIN], checked here (the shim ignores what it
// does not understand, and a typo would silently record nothing).
void checkCaptureRange(const std::string& v)
{
    if (v == "cudaProfilerApi") return;
    if (v.rfind("nvtx:", 0) == 0 && v.size() > 5 && v[5] != '@' && v.back() != '@' && v.size() < 250) return;
    throw UsageError("gpuspy record: unknown --capture-range '" + v + "' (expected cudaProfilerApi or nvtx:NAME[@DOMAIN])");
}

void checkCaptureEnd(const std::string& v)
{
    if (v == "stop" || v == "repeat") return;
    if (v.rfind("repeat:", 0) == 0) {
        parseNumber("gpuspy record: --capture-range-end repeat:N", v.substr(7), 1, 1000000);
        return;
    }
    throw UsageError("gpuspy record: unknown --capture-range-end '" + v + "' (expected stop, repeat or repeat:N)");
}

void checkSeconds(const char* what, const std::string& v)
{
    char* end = nullptr;
    errno = 0;
    const double d = strtod(v.c_str(), &end);
    if (v.empty() || *end || errno || !(d >= 0) || d > 1e7)
        throw UsageError(std::string("gpuspy record: ") + what + " wants seconds (a number >= 0), not '" + v + "'");
}

RecordOptions parse(int argc, char** argv, bool& help)
{
    ArgReader args("record", argc, argv);
    RecordOptions o;
    std::string value;
    help = false;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            help = true;
            return o;
        }
        if (args.flag({"--"})) break;
        if (args.value({"-o", "--output"}, o.output)) continue;
        if (args.flag({"-f", "--force"})) {
            o.force = true;
            continue;
        }
        if (args.flag({"--sim"})) {
            o.sim = true;
            continue;
        }
        if (args.flag({"--no-gpu-time"})) {
            o.noGpuTime = true;
            continue;
        }
        if (args.value({"--format"}, o.format)) {
            checkReportFormat("record", o.format);
            continue;
        }
        if (args.value({"--repeat"}, value)) {
            o.repeat = parseNumber("gpuspy record: --repeat", value, 1, 1000);
            continue;
        }
        if (args.value({"--capture-range"}, o.captureRange)) {
            checkCaptureRange(o.captureRange);
            continue;
        }
        if (args.value({"--capture-range-end"}, o.captureEnd)) {
            checkCaptureEnd(o.captureEnd);
            continue;
        }
        if (args.value({"--delay"}, o.delay)) {
            checkSeconds("--delay", o.delay);
            continue;
        }
        if (args.value({"--duration"}, o.duration)) {
            checkSeconds("--duration", o.duration);
            continue;
        }
        if (args.value({"--stack-depth"}, value)) {
            o.stackDepth = parseNumber("gpuspy record: --stack-depth", value, 0, wire::kMaxStackDepth);
            continue;
        }
        if (args.isOption()) args.unknown();
        break;  // the command, without "--"
    }
    if (!o.captureEnd.empty() && o.captureRange.empty())
        throw UsageError("gpuspy record: --capture-range-end needs --capture-range");
    while (!args.done()) o.command.push_back(args.positional());
    if (o.command.empty()) throw UsageError("gpuspy record: no command to run (usage: gpuspy record [options] -- CMD [ARGS...])");
    return o;
}

std::vector<std::string> childEnvironment(const RecordOptions& o, const std::string& shim, const std::string& simDir,
                                          const std::string& socket)
{
    std::vector<std::pair<std::string, std::string>> set = {
        {"LD_PRELOAD", prepend("LD_PRELOAD", shim)},
        {"GPUSPY_SOCKET", socket},
    };
    if (o.sim) set.emplace_back("LD_LIBRARY_PATH", prepend("LD_LIBRARY_PATH", simDir));
    if (o.stackDepth >= 0) set.emplace_back("GPUSPY_STACK_DEPTH", std::to_string(o.stackDepth));
    if (o.noGpuTime) set.emplace_back("GPUSPY_GPU_TIME", "0");
    if (!o.captureRange.empty()) set.emplace_back("GPUSPY_CAPTURE_RANGE", o.captureRange);
    if (!o.captureEnd.empty()) set.emplace_back("GPUSPY_CAPTURE_END", o.captureEnd);
    if (!o.delay.empty()) set.emplace_back("GPUSPY_DELAY", o.delay);
    if (!o.duration.empty()) set.emplace_back("GPUSPY_DURATION", o.duration);

    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view kv(*e);
        const bool replaced = std::any_of(set.begin(), set.end(), [&](const auto& s) {
            return kv.size() > s.first.size() && kv.substr(0, s.first.size()) == s.first && kv[s.first.size()] == '=';
        });
        if (!replaced) env.emplace_back(kv);
    }
    for (const auto& [k, v] : set) env.push_back(k + "=" + v);
    return env;
}

// Starts the command; returns its pid, or throws with why it could not be started.
pid_t spawn(const std::vector<std::string>& command, const std::vector<std::string>& env)
{
    std::vector<char*> argv, envp;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);

    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
        const int e = errno;
        close(report[0]);
        close(report[1]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(e));
    }
    if (pid == 0) {
        // The child: the dispositions and mask gpuspy inherited (a signal its parent ignored stays
        // ignored), not the ones gpuspy set for itself.
        childSignalDispositions();
        close(report[0]);
        execvpe(argv[0], argv.data(), envp.data());
        const int e = errno;
        [[maybe_unused]] ssize_t w = write(report[1], &e, sizeof e);
        _exit(127);
    }
    close(report[1]);
    int childErrno = 0;
    ssize_t n;
    do n = read(report[0], &childErrno, sizeof childErrno);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == sizeof childErrno) {
        int status;
        waitpid(pid, &status, 0);
        throw std::runtime_error(fmt::format("cannot run '{}': {}", command[0], std::strerror(childErrno)));
    }
    return pid;
}

// The captures the tree's processes wrote of their own (the shim preloaded without the collector's
// socket), read into this one where they can be: returns how many.
size_t mergeOwnCaptures(std::vector<OutsideProcess>& outside, CaptureWriter& writer)
{
    size_t n = 0;
    for (OutsideProcess& p : outside) {
        if (p.why != OutsideWhy::OwnCapture || p.capturePath.empty()) continue;
        try {
            p.merged = writer.appendStreamsOf(p.capturePath) > 0;
            n += p.merged;
        } catch (const std::exception& e) {
            say("gpuspy: cannot merge {}: {}\n", p.capturePath, e.what());
        }
    }
    return n;
}

// One line per process of the tree that is not in the capture through the socket and used the GPU
// or wrote a capture of its own; a count of the others (the report lists them all).
void sayOutside(const std::vector<OutsideProcess>& outside, const CaptureWriter& writer, const std::vector<pid_t>& commands)
{
    size_t others = 0, unseen = 0;
    for (const OutsideProcess& p : outside) {
        const bool command = std::find(commands.begin(), commands.end(), pid_t(p.pid)) != commands.end();
        if (p.why == OutsideWhy::Unseen) {
            // The command itself ended before its image was read (a short static program on a loaded host):
            // what the end says of "no process connected" covers it.
            unseen += !command;
        } else if (p.why == OutsideWhy::OwnCapture && !p.capturePath.empty()) {
            say("gpuspy: pid {} ({}) wrote a capture of its own (GPUSPY_SOCKET was not in its environment): {}{}\n",
                p.pid, p.command, p.capturePath, p.merged ? "; merged into " + writer.path() : "");
        } else if (p.why == OutsideWhy::OwnCapture) {
            say("gpuspy: pid {} ({}) ran with gpuspy but without its socket (GPUSPY_SOCKET was not in its environment), "
                "and the capture it may have written was not found\n", p.pid, p.command);
        } else if (p.cuda == OutsideCuda::Loaded) {
            say("gpuspy: pid {} ({}) ran without gpuspy ({}) and loaded the CUDA driver: its CUDA calls are not in "
                "this capture\n", p.pid, p.command,
                p.why == OutsideWhy::Static ? "a static program" : "LD_PRELOAD was not kept");
        } else if (!command) {
            ++others;  // (the command itself: what the end says of "no process connected" covers it)
        }
    }
    if (others)
        say("gpuspy: {} more process(es) of the tree ran without gpuspy, none seen with the CUDA driver loaded (the "
            "report lists them)\n", others);
    if (unseen)
        say("gpuspy: {} process(es) of the tree exec'd and ended before gpuspy could read what they ran, and sent "
            "nothing to it\n", unseen);
}

int exitStatusOf(int status)
{
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

}  // namespace

int runRecord(int argc, char** argv)
{
    bool help = false;
    const RecordOptions o = parse(argc, argv, help);
    if (help) {
        fmt::print("{}", kUsage);
        return 0;
    }

    std::string shim, simDir;
    const std::string dir = exeDir();
    try {
        shim = locate("GPUSPY_SHIM", {dir + "/../lib/libgpuspy.so", dir + "/../lib/gpuspy/libgpuspy.so"}, "",
                      "the shim libgpuspy.so");
        if (shim.find_first_of(" :") != std::string::npos)
            throw std::runtime_error("the shim's path " + shim + " contains a space or ':', which LD_PRELOAD cannot carry");
        if (o.sim)
            simDir = locate("GPUSPY_SIMCUDA_DIR", {dir + "/../lib/simcuda", dir + "/../lib/gpuspy/simcuda"}, "libcuda.so.1",
                            "the simulated driver (libcuda.so.1)");
    } catch (const std::exception& e) {
        say("gpuspy record: {}\n", e.what());
        return kExitFailure;
    }

    const std::string output = o.output.empty() ? defaultCaptureName() : expandOutputName(o.output);
    std::unique_ptr<CaptureWriter> writer;
    std::unique_ptr<Server> server;
    try {
        writer = std::make_unique<CaptureWriter>(output, o.force);
        ServerOptions so;
        so.writer = writer.get();
        server = std::make_unique<Server>(so);
    } catch (const std::exception& e) {
        if (writer) unlink(output.c_str());
        say("gpuspy record: {}\n", e.what());
        return kExitFailure;
    }

    installSignalHandlers(server->wakeFd());
    const std::string socketPath = server->socketPath();
    // Descendants whose parent exits are handed to us, not to init: a daemon's double fork, a worker
    // that outlives the command. We wait for those that carry the shim, as for the command.
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    // Every process of the tree, followed while it runs: the report names those that ran without the
    // shim or wrote a capture of their own.
    auto watch = std::make_unique<ProcessWatch>(shim, socketPath);
    int status = 0;         // the first failing run's, else the last run's
    bool childDone = false, shimSeen = false, saidWriteFailure = false;
    std::vector<Descendant> carrying;
    std::vector<pid_t> commandPids;  // each run's command
    const unsigned signalsBeforeRuns = signalsReceived();
    for (long run = 0; run < o.repeat; ++run) {
        // Ctrl-C or SIGTERM between two runs: no more runs.
        if (run > 0 && signalsReceived() != signalsBeforeRuns) break;
        const uint32_t firstStream = writer->streams();
        const uint64_t runBegin = monotonicNs();
        int runStatus = 0;
        childDone = false;
        // Held back until the child's pid is known: a hang-up that comes as soon as the command has
        // started (it printed its prompt) must still be passed on to it.
        sigset_t held, before;
        sigemptyset(&held);
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&held, sig);
        sigprocmask(SIG_BLOCK, &held, &before);
        pid_t child;
        try {
            child = spawn(o.command, childEnvironment(o, shim, simDir, server->socketPath()));
        } catch (const std::exception& e) {
            sigprocmask(SIG_SETMASK, &before, nullptr);
            restoreSignalHandlers();
            say("gpuspy record: {}\n", e.what());
            if (run > 0) break;  // the runs made so far are kept
            writer.reset();
            unlink(output.c_str());
            return 127;
        }
        forwardSignalsTo(child);
        sigprocmask(SIG_SETMASK, &before, nullptr);
        commandPids.push_back(child);

        uint64_t doneAt = 0, scannedAt = 0;
        unsigned signalsAtExit = 0;
        const unsigned signalsAtStart = signalsReceived();
        bool noted = false;
        try {
            while (true) {
                server->poll(childDone ? 50 : 250);
                hungUp();  // a hang-up stops nothing: the command decides whether it ends
                noteWriteFailure(*writer, saidWriteFailure);
                // Reap the command and every orphan handed to us.
                for (int st = 0;;) {
                    const pid_t r = waitpid(-1, &st, WNOHANG);
                    if (r <= 0) break;
                    if (r == child && !childDone) {
                        runStatus = st;
                        childDone = true;
                        doneAt = monotonicNs();
                        signalsAtExit = signalsReceived();
                        forwardSignalsTo(0);
                    }
                }
                const uint64_t now = monotonicNs();
                if (!childDone) {
                    if (!shimSeen && now - scannedAt >= kScanIntervalNs) {
                        scannedAt = now;
                        shimSeen = hasShimMapped(child, shim);
                    }
                    continue;
                }
                // The command has exited; its descendants may still be sending, or just connecting, or
                // not yet have made their first CUDA call.
                if (signalsReceived() != signalsAtExit) break;
                const uint64_t quietFrom = std::max(doneAt, server->lastChangeNs()) + kQuietNs;
                const bool quiet = server->openConnections() == 0 && now >= quietFrom;
                // Before finishing, always a fresh look: a descendant may be about to connect.
                if (now - scannedAt >= kScanIntervalNs || (quiet && scannedAt < quietFrom)) {
                    scannedAt = now;
                    carrying = descendantsCarryingShim(shim, socketPath);
                    shimSeen = shimSeen || !carrying.empty();
                }
                if (quiet && carrying.empty()) break;
                if (!noted && (server->openConnections() > 0 || !carrying.empty()) && now - doneAt >= kStragglerNoteNs) {
                    noted = true;
                    std::string what;
                    if (server->openConnections() > 0)
                        what = fmt::format("{} traced process(es) still connected", server->openConnections());
                    if (!carrying.empty())
                        what += fmt::format("{}{} process(es) still running with gpuspy loaded or its settings: {}", what.empty() ? "" : " and ",
                                            carrying.size(), describe(carrying));
                    say("gpuspy: {} has exited; waiting for {} (Ctrl-C to stop waiting)\n", o.command[0], what);
                }
            }
        } catch (const std::exception& e) {
            say("gpuspy record: {}\n", e.what());
            if (!childDone) {
                waitpid(child, &runStatus, 0);
            }
        }
        if (o.repeat > 1)
            writer->writeRun({uint32_t(run), firstStream, writer->streams() - firstStream, exitStatusOf(runStatus),
                              runBegin, monotonicNs()});
        if (run == 0 || exitStatusOf(status) == 0) status = runStatus;
        // Ctrl-C, SIGTERM: no more runs; one whose command could not finish is not repeated either.
        if (signalsReceived() != signalsAtStart || !childDone) break;
    }
    restoreSignalHandlers();
    if (childDone && !carrying.empty()) {
        carrying = descendantsCarryingShim(shim, socketPath);
        if (!carrying.empty())
            say("gpuspy: stopped waiting; still running with gpuspy loaded or its settings, not in this capture "
                               "from now on: {}\n", describe(carrying));
    }

    const int exitStatus = exitStatusOf(status);
    size_t processes = 0, merged = 0;
    std::vector<OutsideProcess> outside;
    try {
        server->closeAll();
        const uint64_t calls = server->callsReceived();
        Capture capture = server->takeCapture();
        server.reset();
        const std::vector<WatchedProcess> seen = watch->seen();
        watch.reset();
        std::vector<uint32_t> connected;
        for (const Process& p : capture.processes) connected.push_back(p.pid);
        outside = outsideProcesses(seen, connected);
        merged = mergeOwnCaptures(outside, *writer);
        for (const OutsideProcess& p : outside) writer->writeOutside(p);
        finishCapture(capture, *writer);
        processes = capture.distinctProcesses() + merged;
        say("{}\n", captureSummary(*writer, processes, calls, capture.badStreams));
        sayOutside(outside, *writer, commandPids);
    } catch (const std::exception& e) {
        say("gpuspy record: {}\n", e.what());
        return exitStatus;
    }
    if (processes == 0) {
        // Name the cause where it is known; never blame static or setuid programs when it was not one.
        std::string why = shimSeen ? std::string() : unpreloadable(o.command[0]);
        const bool ownCaptures = std::any_of(outside.begin(), outside.end(), [](const OutsideProcess& p) {
            return p.why == OutsideWhy::OwnCapture && !p.capturePath.empty();
        });
        if (ownCaptures)
            why = "the processes that used gpuspy wrote captures of their own (named above), which could not be merged";
        if (why.empty() && shimSeen)
            why = fmt::format("gpuspy was loaded into {}, but no process made a CUDA call it saw, or those that did "
                              "had cleared their environment (GPUSPY_SOCKET) or changed user before their first CUDA "
                              "call", o.command[0]);
        if (why.empty())
            why = fmt::format("{} made no CUDA call gpuspy saw, or its processes did not keep gpuspy's environment "
                              "(LD_PRELOAD, GPUSPY_SOCKET) or changed user before their first CUDA call", o.command[0]);
        say("gpuspy: no process connected to the collector: {}\n", why);
        return exitStatus;
    }
    // The report is that of the capture just written, read back as `gpuspy report` reads it: the
    // records were not kept, and the two print the same bytes.
    try {
        ReportRequest request;
        request.format = o.format;
        request.color = stdoutIsTerminal();
        request.width = terminalWidth();
        ReportSource source;
        const std::string report = reportOfCapture(output, request, source);
        std::fwrite(report.data(), 1, report.size(), stdout);
        std::fflush(stdout);
    } catch (const std::exception& e) {
        say("gpuspy record: {}\n", e.what());
    }
    return exitStatus;
}

}  // namespace gpuspy::collect::cli
