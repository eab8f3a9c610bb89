// collector/cli_common.cpp: what the gpuspy subcommands share.
#include "collector/cli.h"

#if GPUSPY_HAVE_SYMBOLIZE
#include "collector/symbolize.h"
#endif
#if GPUSPY_HAVE_REPORT
#include "collector/analyze.h"
#include "collector/report.h"
#endif

#include <fmt/format.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace gpuspy::collect::cli {

bool ArgReader::flag(std::initializer_list<std::string_view> names)
{
    if (done()) return false;
    for (std::string_view n : names)
        if (peek() == n) {
            ++m_i;
            return true;
        }
    return false;
}

bool ArgReader::value(std::initializer_list<std::string_view> names, std::string& out)
{
    if (done()) return false;
    const std::string_view a = peek();
    for (std::string_view n : names) {
        if (a == n) {
            if (m_i + 1 >= m_argc) throw UsageError(fmt::format("gpuspy {}: option {} needs a value", m_command, n));
            out = m_argv[m_i + 1];
            m_i += 2;
            return true;
        }
        const bool longOpt = n.size() > 2 && n[1] == '-';
        if (longOpt && a.size() > n.size() && a.substr(0, n.size()) == n && a[n.size()] == '=') {
            out = std::string(a.substr(n.size() + 1));
            ++m_i;
            return true;
        }
        if (!longOpt && a.size() > n.size() && a.substr(0, n.size()) == n) {
            out = std::string(a.substr(n.size()));
            ++m_i;
            return true;
        }
    }
    return false;
}

void ArgReader::fileOperand(std::string& file)
{
    if (flag({"--"})) {
        if (!done() && file.empty()) file = positional();
        if (!done()) unknown();
        return;
    }
    if (isOption() || !file.empty()) unknown();
    file = positional();
}

void ArgReader::unknown() const
{
    const std::string_view a = peek();
    if (a.size() > 1 && a[0] == '-') throw UsageError(fmt::format("gpuspy {}: unknown option '{}'", m_command, a));
    throw UsageError(fmt::format("gpuspy {}: unexpected argument '{}'", m_command, a));
}

long parseNumber(std::string_view option, const std::string& text, long lo, long hi)
{
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
        throw UsageError(fmt::format("{} expects a number from {} to {}, not '{}'", option, lo, hi, text));
    return v;
}

void checkReportFormat(const char* command, const std::string& format)
{
    if (format != "text" && format != "json" && format != "csv")
        throw UsageError(std::string("gpuspy ") + command + ": --format is text, json or csv, not '" + format + "'");
}

bool reportBuilt()
{
#if GPUSPY_HAVE_REPORT
    return true;
#else
    return false;
#endif
}

bool stdoutIsTerminal()
{
    const char* noColor = std::getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(noColor && *noColor);
}

std::string reportOfCapture(const std::string& path, const ReportRequest& request, ReportSource& source)
{
    ReadOptions read;
    read.keepEvents = false;
#if GPUSPY_HAVE_REPORT
    ReportOptions options;
    options.top = request.top;
    options.pid = request.pid;
    StreamAnalyzer analyzer(options);
    read.onRecord = [&](const Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); };
    read.onProcess = [&](const Process& p) { analyzer.onProcess(p); };
    source.capture = readCapture(path, read, &source.info);
    const Report report = analyzer.finish(source.capture.badStreams);
    std::string out;
    if (request.format == "json")
        out = renderJson(report);
    else if (request.format == "csv")
        out = renderCsv(report);
    else
        out = renderText(report, request.color);
#else
    source.capture = readCapture(path, read, &source.info);
    std::string out = "gpuspy: the report is not built (collector/analyze and collector/report are missing); a summary:\n";
    for (const Process& p : source.capture.processes)
        out += fmt::format("  pid {:>7}  {}{}\n", p.pid, p.command, p.streamError.empty() ? "" : "  [" + p.streamError + "]");
    if (source.capture.badStreams) out += fmt::format("  {} bad streams\n", source.capture.badStreams);
#endif
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
}

void finishCapture(Capture& capture, CaptureWriter& writer)
{
    for (size_t i = 0; i < capture.processes.size(); ++i) {
        Process& p = capture.processes[i];
#if GPUSPY_HAVE_SYMBOLIZE
        try {
            symbolizeProcess(p);
        } catch (const std::exception& e) {
            fmt::print(stderr, "gpuspy: cannot symbolize process {}: {}\n", p.pid, e.what());
        }
#endif
        if (!p.symbols.empty()) writer.writeSymbols(uint32_t(i), p);
    }
    writer.finish(capture.badStreams);
}

std::string captureSummary(const std::string& path, size_t processes, uint64_t calls, uint64_t badStreams,
                           uint64_t bytes)
{
    return fmt::format("gpuspy: wrote {}: {} process(es), {} calls{}, {} bytes", path, processes, calls,
                       badStreams ? fmt::format(", {} bad stream(s)", badStreams) : "", bytes);
}

std::string defaultCaptureName()
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    std::string name = fmt::format("gpuspy-{}.gspy", stamp);
    struct stat st{};
    for (int i = 2; lstat(name.c_str(), &st) == 0 && i < 1000; ++i) name = fmt::format("gpuspy-{}-{}.gspy", stamp, i);
    return name;
}

}  // namespace gpuspy::collect::cli

namespace gpuspy::collect::cli {

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_wakeFd = -1;
volatile sig_atomic_t g_signals = 0;
volatile sig_atomic_t g_lastSignal = 0;

void onStopSignal(int sig, siginfo_t* info, void*)
{
    const int savedErrno = errno;
    g_signals = g_signals + 1;
    g_lastSignal = sig;
    const pid_t child = g_child;
    if (child > 0 && info->si_code != SI_KERNEL) kill(child, sig);
    if (g_wakeFd >= 0) {
        const char b = 1;
        [[maybe_unused]] ssize_t r = write(g_wakeFd, &b, 1);
    }
    errno = savedErrno;
}

void onChild(int)
{
    const int savedErrno = errno;
    if (g_wakeFd >= 0) {
        const char b = 1;
        [[maybe_unused]] ssize_t r = write(g_wakeFd, &b, 1);
    }
    errno = savedErrno;
}

}  // namespace

void installSignalHandlers(int wakeFd)
{
    g_wakeFd = wakeFd;
    struct sigaction sa{};
    sa.sa_sigaction = onStopSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    struct sigaction sc{};
    sc.sa_handler = onChild;
    sc.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, nullptr);
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

void restoreSignalHandlers()
{
    g_child = 0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    g_wakeFd = -1;
}

}  // namespace gpuspy::collect::cli
