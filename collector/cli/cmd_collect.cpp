// collector/cli/cmd_collect.cpp: `gpuspy collect`, a long-running collector for programs started elsewhere.
#include "collector/cli/cli.h"
#include "collector/cli/live.h"
#include "collector/live/control.h"
#include "collector/live/flight_recorder.h"
#include "collector/live/live_stats.h"
#include "collector/live/metrics.h"
#include "collector/base/say.h"
#include "collector/live/server.h"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <vector>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy collect [--socket PATH] [-o FILE] [-f] [--paused] [--ring SECONDS [--ring-max MIB]]\n"
    "                      [--metrics HOST:PORT [--metrics-kernels N]]\n"
    "\n"
    "Collects from programs started separately with the shim preloaded:\n"
    "    GPUSPY_SOCKET=PATH LD_PRELOAD=/path/to/libgpuspy.so ./server\n"
    "until SIGINT (Ctrl-C) or SIGTERM, then symbolizes and writes the capture. Only processes of your\n"
    "own user may connect. A hang-up (SIGHUP) does not stop it. When the capture cannot be written\n"
    "(a full disk), it says so once and goes on reading its clients, counting what it cannot keep;\n"
    "the exit status is then 1.\n"
    "\n"
    "options:\n"
    "  --socket PATH       where to listen (default: a fresh private directory, printed at start)\n"
    "  -o, --output FILE   the capture (default gpuspy-YYYYmmdd-HHMMSS.gspy); created 0600\n"
    "  -f, --force         overwrite FILE if it exists\n"
    "  --paused            connected processes do not record until `gpuspy ctl --socket PATH start`\n"
    "                      (their calls are counted, not recorded; a process records from its start\n"
    "                      until the collector's word arrives: set GPUSPY_PAUSED=1 in its environment\n"
    "                      to have it wait from its first call)\n"
    "  --ring SECONDS      flight recorder: write nothing as it goes; keep in memory only each process's\n"
    "                      last SECONDS of records (counted back from its newest one), and what a capture\n"
    "                      of them needs (its APIs, kernel names, stacks, modules). `gpuspy ctl --socket\n"
    "                      PATH snapshot -o FILE`, or SIGUSR1 (into gpuspy-snapshot-DATE.gspy in the\n"
    "                      collector's directory), writes them as a capture; so does the end, with -o.\n"
    "                      Bounds: memory, the records of all processes together at most --ring-max MiB\n"
    "                      (default 256; the oldest of the fullest process go first) plus the\n"
    "                      definitions, and the last 64 finished processes; disk, the snapshots only\n"
    "  --ring-max MIB      the flight recorder's memory bound for records (1 to 65536)\n"
    "  --metrics HOST:PORT serve Prometheus metrics at http://HOST:PORT/metrics (PORT or :PORT: on\n"
    "                      127.0.0.1; give 0.0.0.0:PORT to serve other hosts): kernel launches, GPU busy\n"
    "                      ratio, transfer bytes and host seconds, sync blocked seconds, findings, the\n"
    "                      shim's dropped records and own time, whether it records and the calls it\n"
    "                      made while paused; labels pid, command, category, direction, host_memory,\n"
    "                      mode, sync_kind, rule, and on per-device series device, gpu, UUID,\n"
    "                      pci_bus_id, Hostname (as DCGM exporter's); no kernel names\n"
    "  --metrics-kernels N also per-kernel series (launches, GPU seconds) for the first N kernels of each\n"
    "                      process (1 to 100; the rest as kernel=\"other\"); off by default\n"
    "  -h, --help          this text\n"
    "\n"
    "With --socket PATH, `gpuspy ctl --socket PATH start|stop|status|snapshot` controls the collector and\n"
    "its processes at runtime (its control socket is PATH.ctl), and `gpuspy top --socket PATH` shows each\n"
    "process's figures, refreshed every second.\n";

volatile sig_atomic_t g_snapshotRequests = 0;
int g_snapshotWakeFd = -1;

void onSnapshotSignal(int)
{
    const int saved = errno;
    g_snapshotRequests = g_snapshotRequests + 1;
    const char b = 1;
    if (g_snapshotWakeFd >= 0) [[maybe_unused]] ssize_t r = write(g_snapshotWakeFd, &b, 1);
    errno = saved;
}

// SIGUSR1 asks for a snapshot (and must not kill a collector without a ring, its default action).
void catchSnapshotSignal(int wakeFd)
{
    g_snapshotWakeFd = wakeFd;
    struct sigaction sa{};
    sa.sa_handler = onSnapshotSignal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
}

// The collect loop is over: Ctrl-C, SIGTERM and SIGUSR1 back to what they were (SIGUSR1 ignored).
void stopCatchingSignals()
{
    restoreSignalHandlers();
    signal(SIGUSR1, SIG_IGN);
    g_snapshotWakeFd = -1;
}

// The live figures, for `gpuspy top` and --metrics. The analysis runs once a second while someone
// looks (a metrics endpoint, or a top request in the last kTopLingerNs); otherwise the records of each
// second are only dropped.
struct Live {
    explicit Live(FlightRecorder* ring) : stats(ring) {}
    LiveStats stats;
    std::unique_ptr<MetricsServer> metrics;
    uint64_t lastTopNs = 0;
    static constexpr uint64_t kTickNs = 1000000000ull;
    static constexpr uint64_t kTopLingerNs = 10000000000ull;

    bool watched(uint64_t now) const { return metrics || (lastTopNs && now - lastTopNs < kTopLingerNs); }
    void service(const Server& server)
    {
        const uint64_t now = monotonicNs();
        stats.setWatched(watched(now));
        if (stats.lastTickNs() && now - stats.lastTickNs() < kTickNs) return;
        stats.tick(now, watched(now));
        if (metrics) metrics->update(stats, server.openConnections());
    }
};

// The control requests this collector answers; the verbs of other features join here.
std::string answerControl(Live& live, FlightRecorder* ring, const std::string& request)
{
    if (request == "top" || request.rfind("top ", 0) == 0) {
        const uint64_t now = monotonicNs();
        const bool wasWatched = live.watched(now);
        live.lastTopNs = now;
        live.stats.setWatched(true);
        size_t width = 100;
        if (request.size() > 4) width = size_t(std::strtoul(request.c_str() + 4, nullptr, 10));
        if (!wasWatched) return "ok\ngpuspy top: starting the live analysis; the first figures come in a second\n";
        return "ok\n" + live.stats.topText(width);
    }
    std::string answer = answerRingRequest(ring, request);
    if (answer.empty()) answer = "error unknown request '" + request.substr(0, request.find(' ')) + "'\n";
    return answer;
}

// The control socket PATH.ctl (collector/live/control.h), for `gpuspy ctl` and `gpuspy top`, in both collect
// loops. Recording on or off: the state every connected process is told, again whenever a process
// connects (a shim takes a repeated word as a no-op).
class Controls {
public:
    // `where`: what the collector does with the records, for status ("writing FILE").
    Controls(Server& server, Live& live, FlightRecorder* ring, bool paused, std::string where)
        : m_server(server), m_control(server.socketPath()), m_recording(!paused), m_where(std::move(where))
    {
        m_control.on("start", [this](const std::vector<std::string>&) {
            m_recording = true;
            return fmt::format("ok: recording in {} process(es)", tell());
        });
        m_control.on("stop", [this](const std::vector<std::string>&) {
            m_recording = false;
            return fmt::format("ok: paused in {} process(es) (their calls are counted, not recorded)", tell());
        });
        m_control.on("status", [this](const std::vector<std::string>&) {
            const std::vector<uint32_t> connected = m_server.connectedPids();
            std::string pids;
            for (uint32_t pid : connected) pids += (pids.empty() ? "" : " ") + std::to_string(pid);
            return fmt::format("ok: {}; {} process(es) connected{}{}; {} calls received; {}",
                               m_recording ? "recording" : "paused", connected.size(), pids.empty() ? "" : ": ",
                               pids, m_server.callsReceived(), m_where);
        });
        // answerControl's answers end in a newline, which the control socket adds itself.
        auto answer = [&live, ring](const std::string& request) {
            std::string a = answerControl(live, ring, request);
            if (!a.empty() && a.back() == '\n') a.pop_back();
            return a;
        };
        // "snapshot FORCE PATH": the path as sent, spaces and all.
        m_control.onLine("snapshot", [answer](const std::string& rest) { return answer("snapshot " + rest); });
        m_control.on("ring", [answer](const std::vector<std::string>&) { return answer("ring"); });
        // top's frame opens with the collector's state: recording or paused, and where the records go.
        m_control.on("top", [this, answer](const std::vector<std::string>& args) {
            std::string a = answer(args.empty() ? std::string("top") : "top " + args[0]);
            if (a.rfind("ok\n", 0) == 0)
                a.insert(3, std::string(m_recording ? "state: recording; "
                                                    : "state: PAUSED (the processes count their calls, record none: gpuspy "
                                                      "ctl start); ") +
                                m_where + "\n");
            return a;
        });
    }

    // Answers the requests waiting now; tells a process that connected while paused that it is.
    void serve()
    {
        if (!m_recording && someoneNew()) tell();
        m_control.serve();
    }

private:
    size_t tell()
    {
        const uint8_t word = m_recording ? wire::kControlStart : wire::kControlStop;
        const std::vector<uint32_t> pids = m_server.connectedPids();
        m_told = std::set<uint32_t>(pids.begin(), pids.end());
        return m_server.sendToClients(&word, 1);
    }
    bool someoneNew() const
    {
        for (uint32_t pid : m_server.connectedPids())
            if (!m_told.count(pid)) return true;
        return false;
    }

    Server& m_server;
    ControlServer m_control;
    bool m_recording;
    std::string m_where;
    std::set<uint32_t> m_told;  // processes that were sent the current state
};

// Starts the metrics endpoint if asked; false (said why) when it cannot.
bool startMetrics(Live& live, const std::string& hostPort, size_t kernelSeries)
{
    if (hostPort.empty()) return true;
    try {
        metricsAddress(hostPort);  // a typo is told before a missing plugin
        const std::string dir = exeDir();
        const std::string plugin = locate("GPUSPY_METRICS_PLUGIN",
                                          {dir + "/../lib/libgpuspy_metrics.so", dir + "/../lib/gpuspy/libgpuspy_metrics.so"},
                                          "", "the metrics plugin libgpuspy_metrics.so");
        live.metrics = std::make_unique<MetricsServer>(hostPort, plugin, kernelSeries);
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        return false;
    }
    say("gpuspy: metrics at http://{}/metrics\n", live.metrics->address());
    return true;
}

// `collect --ring`: nothing is written as records arrive; the flight recorder holds the last seconds.
int collectRing(const std::string& socket, const std::string& output, bool force, bool paused,
                FlightRecorder& ring, const std::string& metrics, size_t kernelSeries)
{
    Live live(&ring);
    if (!startMetrics(live, metrics, kernelSeries)) return kExitFailure;
    std::unique_ptr<Server> server;
    std::unique_ptr<Controls> controls;
    try {
        ServerOptions so;
        so.socketPath = socket;
        so.listener = &live.stats;
        server = std::make_unique<Server>(so);
        controls = std::make_unique<Controls>(*server, live, &ring, paused,
                                              fmt::format("keeping each process's last {:g} s in memory",
                                                          double(ring.windowNs()) / 1e9));
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        return kExitFailure;
    }
    installSignalHandlers(server->wakeFd());
    catchSnapshotSignal(server->wakeFd());
    say("gpuspy: collecting on {}, keeping each process's last {:g} s in memory (at most {} MiB of records); "
        "snapshot with gpuspy ctl --socket {} snapshot -o FILE or SIGUSR1 (Ctrl-C or SIGTERM to finish)\n",
        server->socketPath(), double(ring.windowNs()) / 1e9, ring.maxBytes() >> 20, server->socketPath());
    if (socket.empty()) fmt::print("GPUSPY_SOCKET={}\n", server->socketPath());
    std::fflush(stdout);
    int rc = 0;
    sig_atomic_t snapshotsDone = 0;
    try {
        while (signalsReceived() == 0) {
            server->poll(100);
            controls->serve();
            hungUp();
            live.service(*server);
            if (g_snapshotRequests != snapshotsDone) {
                snapshotsDone = g_snapshotRequests;
                try {
                    say("gpuspy: SIGUSR1: {}\n", writeSnapshot(ring, defaultCaptureName("gpuspy-snapshot"), false));
                } catch (const std::exception& e) {
                    say("gpuspy: SIGUSR1: no snapshot: {}\n", e.what());
                }
            }
        }
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        rc = kExitFailure;
    }
    stopCatchingSignals();
    controls.reset();
    try {
        server->closeAll();
        server.reset();
        if (!output.empty()) say("gpuspy: {}\n", writeSnapshot(ring, output, force));
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        rc = kExitFailure;
    }
    return rc;
}

}  // namespace

int runCollect(int argc, char** argv)
{
    ArgReader args("collect", argc, argv);
    std::string socket, output, ringText, ringMaxText, metrics, kernelsText;
    bool force = false, paused = false;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--socket"}, socket) || args.value({"-o", "--output"}, output) ||
            args.value({"--ring"}, ringText) || args.value({"--ring-max"}, ringMaxText) ||
            args.value({"--metrics"}, metrics) || args.value({"--metrics-kernels"}, kernelsText))
            continue;
        if (args.flag({"-f", "--force"})) {
            force = true;
            continue;
        }
        if (args.flag({"--paused"})) {
            paused = true;
            continue;
        }
        args.unknown();
    }
    if (!ringMaxText.empty() && ringText.empty()) throw UsageError("gpuspy collect: --ring-max goes with --ring SECONDS");
    if (!kernelsText.empty() && metrics.empty()) throw UsageError("gpuspy collect: --metrics-kernels goes with --metrics HOST:PORT");
    const size_t kernelSeries = kernelsText.empty() ? 0 : size_t(parseNumber("--metrics-kernels", kernelsText, 1, 100));
    std::unique_ptr<FlightRecorder> ring;
    if (!ringText.empty()) {
        const long seconds = parseNumber("--ring", ringText, 1, 86400);
        const long mib = ringMaxText.empty() ? 256 : parseNumber("--ring-max", ringMaxText, 1, 65536);
        ring = std::make_unique<FlightRecorder>(uint64_t(seconds) * 1000000000ull, uint64_t(mib) << 20);
        return collectRing(socket, output, force, paused, *ring, metrics, kernelSeries);
    }
    if (output.empty()) output = defaultCaptureName();
    Live live(nullptr);
    if (!startMetrics(live, metrics, kernelSeries)) return kExitFailure;

    std::unique_ptr<CaptureWriter> writer;
    std::unique_ptr<Server> server;
    std::unique_ptr<Controls> controls;
    try {
        writer = std::make_unique<CaptureWriter>(output, force);
        ServerOptions so;
        so.socketPath = socket;
        so.writer = writer.get();
        so.listener = &live.stats;
        server = std::make_unique<Server>(so);
        controls = std::make_unique<Controls>(*server, live, nullptr, paused, "writing " + output);
    } catch (const std::exception& e) {
        if (writer) unlink(output.c_str());
        say("gpuspy collect: {}\n", e.what());
        return kExitFailure;
    }

    installSignalHandlers(server->wakeFd());
    catchSnapshotSignal(server->wakeFd());
    say("gpuspy: collecting on {} into {} (Ctrl-C or SIGTERM to finish)\n", server->socketPath(), output);
    if (socket.empty()) fmt::print("GPUSPY_SOCKET={}\n", server->socketPath());
    std::fflush(stdout);
    int rc = 0;
    bool saidWriteFailure = false;
    sig_atomic_t snapshotsSeen = 0;
    try {
        // A hang-up (the ssh session that started it went away) does not stop a collector.
        while (signalsReceived() == 0) {
            server->poll(100);
            controls->serve();
            hungUp();
            live.service(*server);
            if (g_snapshotRequests != snapshotsSeen) {
                snapshotsSeen = g_snapshotRequests;
                say("gpuspy: SIGUSR1: no snapshot: this collector keeps no ring (gpuspy collect --ring SECONDS); "
                    "it writes everything to {}\n", output);
            }
            noteWriteFailure(*writer, saidWriteFailure);
        }
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        rc = kExitFailure;
    }
    stopCatchingSignals();
    controls.reset();

    try {
        server->closeAll();
        const uint64_t calls = server->callsReceived();
        Capture capture = server->takeCapture();
        server.reset();
        finishCapture(capture, *writer);
        say("{}\n", captureSummary(*writer, capture.distinctProcesses(), calls, capture.badStreams));
        if (writer->failed()) rc = kExitFailure;
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        rc = kExitFailure;
    }
    return rc;
}

}  // namespace gpuspy::collect::cli
