// collector/cli/common.cpp: what the gpuspy subcommands share.
#include "collector/cli/cli.h"
#include "collector/base/say.h"

#if GPUSPY_HAVE_SYMBOLIZE
#include "collector/symbolize/symbolize.h"
#endif
#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/report/report.h"
#include "collector/replay/predict.h"

#include <nlohmann/json.hpp>
#endif

#include <fmt/format.h>

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

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

void ArgReader::fileOperands(std::vector<std::string>& files)
{
    if (flag({"--"})) {
        while (!done()) files.push_back(positional());
        return;
    }
    if (isOption()) unknown();
    files.push_back(positional());
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

size_t terminalWidth()
{
    // COLUMNS first (a shell exports it; a test sets it), then the terminal's own size; 0 for a pipe.
    if (const char* c = std::getenv("COLUMNS"); c && *c) {
        char* end = nullptr;
        const long n = std::strtol(c, &end, 10);
        if (end && !*end && n > 0) return size_t(n);
    }
    winsize ws{};
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 0;
}

#if GPUSPY_HAVE_SYMBOLIZE
namespace {

// Symbolizes the processes whose capture holds no symbols, from the binaries on disk today, and says
// so in one note naming them and the binaries gone or changed (modified after the process started).
class LateSymbols {
public:
    void symbolize(Process& p)
    {
        try {
            m_cache.symbolizeProcess(p);
        } catch (const std::exception& e) {
            m_failed += fmt::format("{}pid {}: {}", m_failed.empty() ? "" : "; ", p.pid, e.what());
            return;
        }
        m_pids.push_back(p.pid);
        std::set<std::string> used;
        for (const auto& [id, pcs] : p.stacks)
            for (uint64_t pc : pcs)
                for (const ModuleInfo& m : p.modules)
                    if (pc >= m.start && pc < m.end && !m.path.empty() && m.path[0] == '/') used.insert(m.path);
        for (const std::string& file : used) {
            struct stat st{};
            if (stat(file.c_str(), &st) != 0)
                m_gone.insert(file);
            else if (p.startRealtimeNs && uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec) >
                                              p.startRealtimeNs)
                m_changed.insert(file);
        }
    }

    void addNotes(std::vector<std::string>& notes) const
    {
        if (!m_pids.empty()) {
            std::string pids;
            for (size_t i = 0; i < m_pids.size() && i < 8; ++i) pids += fmt::format("{}{}", i ? ", " : "", m_pids[i]);
            if (m_pids.size() > 8) pids += fmt::format(" and {} more", m_pids.size() - 8);
            std::string note = fmt::format("{} {}: the capture holds no symbols (written by the shim alone, or its "
                                           "collector stopped first); stacks were symbolized now, from the binaries on disk",
                                           m_pids.size() == 1 ? "pid" : "pids", pids);
            if (!m_gone.empty()) note += "; gone since (frames shown as module+offset): " + join(m_gone);
            if (!m_changed.empty())
                note += "; changed since the process started (its frames may name the wrong code): " + join(m_changed);
            notes.push_back(note);
        }
        if (!m_failed.empty()) notes.push_back("the capture holds no symbols and symbolizing failed: " + m_failed);
    }

private:
    static std::string join(const std::set<std::string>& files)
    {
        std::string s;
        for (const std::string& f : files) s += (s.empty() ? "" : ", ") + f;
        return s;
    }

    SymbolCache m_cache;
    std::vector<uint32_t> m_pids;
    std::set<std::string> m_gone, m_changed;
    std::string m_failed;
};

}  // namespace
#endif

#if GPUSPY_HAVE_REPORT
namespace {

// A capture of repeated runs: each run analysed on its own (its processes, records kept: captures of
// repeated runs are test-sized), the spread of their figures, and the report of the run of median wall.
// `whole` (the streaming report of every process together) gives the notes of the whole capture.
Report analyzeRuns(const std::string& path, const ReportOptions& options, const Report& whole, ReportSource& source)
{
    ReadInfo info;
    Capture all = readCapture(path, ReadOptions{}, &info);
    std::vector<Report> reports;
    std::vector<RunFigures> figures;
    for (const RunInfo& run : all.runs) {
        Capture one;
        for (size_t i : run.processes)
            if (i < all.processes.size()) one.processes.push_back(std::move(all.processes[i]));
        Report r = analyzeAndPredict(one, options);
        RunFigures f = runFigures(r);
        f.run = run.run;
        f.exitStatus = run.exitStatus;
        figures.push_back(std::move(f));
        reports.push_back(std::move(r));
    }
    source.runs = summarizeRuns(std::move(figures));
    Report report = std::move(reports[source.runs.medianRun]);
    report.badStreams = whole.badStreams;
    report.outside = whole.outside;  // the tree's processes not in the streams, over every run
    // The whole capture's notes that the run's report does not already say (the same words about other
    // counts are the same note: its figures are the run's, not all the runs').
    auto shape = [](const std::string& note) {
        std::string s;
        for (char c : note)
            if (c < '0' || c > '9') s += c;
        return s;
    };
    for (const std::string& note : whole.notes)
        if (std::none_of(report.notes.begin(), report.notes.end(), [&](const std::string& n) { return shape(n) == shape(note); }))
            report.notes.push_back(note);
    report.notes.push_back(fmt::format("the capture holds {} runs of the command (record --repeat): this report is run "
                                       "{}'s, the run of median wall time; \"Runs\" gives every figure's spread",
                                       source.runs.count(), source.runs.runs[source.runs.medianRun].run + 1));
    return report;
}

}  // namespace

Report analyzeAndPredict(const Capture& capture, const ReportOptions& options)
{
    Report r = analyze(capture, options);
    replay::predictFindings(r, capture);
    return r;
}

Report analyzeCapture(const std::string& path, const ReportRequest& request, ReportSource& source)
{
    return analyzeCaptures({path}, request, source);
}

Report analyzeCaptures(const std::vector<std::string>& paths, const ReportRequest& request, ReportSource& source)
{
    const std::string& path = paths.front();
    ReadOptions read;
    read.keepEvents = false;
    ReportOptions options;
    options.top = request.top;
    options.pid = request.pid;
    options.byLaunchConfig = request.byLaunchConfig;
    if (request.run > 0) {
        // One run of a repeated capture (or a capture of one run, its own run 1): its processes alone.
        source.capture = readCapture(path, ReadOptions{}, &source.info);
        source.runsInCapture = source.capture.runs.size();
        selectRun(source.capture, request.run);
        Report report = analyzeAndPredict(source.capture, options);
        report.outside = source.capture.outside;
        if (source.runsInCapture >= 2)
            report.notes.push_back(fmt::format("the capture holds {} runs of the command (record --repeat): this report "
                                               "is run {}'s (--run)",
                                               source.runsInCapture, request.run));
        return report;
    }
    StreamAnalyzer analyzer(options);
#if GPUSPY_HAVE_SYMBOLIZE
    LateSymbols lateSymbols;
#endif
    read.onRecord = [&](const Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); };
#if GPUSPY_HAVE_SYMBOLIZE
    // A stream the shim wrote alone (a daemon's only capture), or a capture whose collector died
    // before its symbols: symbolized now, from the binaries still on disk.
    read.completeProcess = [&](Process& p) {
        if (p.symbols.empty() && !p.stacks.empty() && (request.pid < 0 || p.pid == uint32_t(request.pid)))
            lateSymbols.symbolize(p);
    };
#endif
    read.onProcess = [&](const Process& p) { analyzer.onProcess(p); };
    read.keepEvents = true;  // for the replay, up to its budget
    read.keepCallsUpTo = replayCallBudget() / paths.size();
    read.windowPastBudget = true;  // a process past it is replayed on a window of its latest calls
    if (paths.size() == 1) {
        source.capture = readCapture(path, read, &source.info);
    } else {
        std::vector<ClockAlignment> clocks;
        source.capture = readCapturesAsOne(paths, read, source.info, &clocks);
        Report report = analyzer.finish(source.capture.badStreams);
        report.outside = source.capture.outside;
        replay::predictFindings(report, source.capture);
        noteAlignment(report, clocks);
#if GPUSPY_HAVE_SYMBOLIZE
        lateSymbols.addNotes(report.notes);
#endif
        return report;
    }
    source.runsInCapture = source.capture.runs.size();
    Report report = analyzer.finish(source.capture.badStreams);
    report.outside = source.capture.outside;
    if (source.capture.runs.size() < 2) replay::predictFindings(report, source.capture);
#if GPUSPY_HAVE_SYMBOLIZE
    lateSymbols.addNotes(report.notes);
#endif
    if (source.capture.runs.size() >= 2) return analyzeRuns(path, options, report, source);
    return report;
}
#endif

uint64_t replayCallBudget()
{
    // A test-only knob (tests/savings): a small budget puts a program of a few hundred calls past it.
    if (const char* env = std::getenv("GPUSPY_TEST_REPLAY_CALL_BUDGET"); env && *env) {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(env, &end, 10);
        if (end && !*end && n > 0) return n;
    }
    return kReplayCallBudget;
}

std::string reportOfCapture(const std::string& path, const ReportRequest& request, ReportSource& source)
{
    return reportOfCaptures({path}, request, source);
}

std::string reportOfCaptures(const std::vector<std::string>& paths, const ReportRequest& request, ReportSource& source)
{
#if GPUSPY_HAVE_REPORT
    const Report report = analyzeCaptures(paths, request, source);
    std::string out;
    if (request.format == "json" && source.runs.count()) {
        nlohmann::ordered_json j = reportJson(report);
        addRunsJson(j, source.runs);
        out = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    } else if (request.format == "json") {
        out = renderJson(report);
    } else if (request.format == "csv") {
        // CSV has no notes: a first comment line says which run of a repeated capture the tables are.
        if (source.runs.count())
            out = fmt::format("# the capture holds {} runs of the command (record --repeat): these tables are run {}'s, "
                              "the run of median wall time; --run K for another\n",
                              source.runs.count(), source.runs.runs[source.runs.medianRun].run + 1);
        else if (request.run > 0 && source.runsInCapture >= 2)
            out = fmt::format("# the capture holds {} runs of the command (record --repeat): these tables are run {}'s\n",
                              source.runsInCapture, request.run);
        out += renderCsv(report);
    } else {
        out = renderText(report, TextOptions{request.color, request.width, request.verbose});
        if (source.runs.count()) {
            if (!out.empty() && out.back() != '\n') out += '\n';
            out += renderRunsText(source.runs);
        }
    }
#else
    ReadOptions read;
    read.keepEvents = false;
    source.capture = readCapture(paths.front(), read, &source.info);
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
#if GPUSPY_HAVE_SYMBOLIZE
    SymbolCache symbols;  // one read of each binary for all the processes
#endif
    for (size_t i = 0; i < capture.processes.size(); ++i) {
        Process& p = capture.processes[i];
#if GPUSPY_HAVE_SYMBOLIZE
        try {
            symbols.symbolizeProcess(p);
        } catch (const std::exception& e) {
            say("gpuspy: cannot symbolize process {}: {}\n", p.pid, e.what());
        }
#endif
        if (!p.symbols.empty()) writer.writeSymbols(uint32_t(i), p);
    }
    writer.finish(capture.badStreams);
}

std::string captureSummary(const CaptureWriter& writer, size_t processes, uint64_t calls, uint64_t badStreams)
{
    const std::string bad = badStreams ? fmt::format(", {} bad stream(s)", badStreams) : "";
    if (writer.failed())
        return fmt::format("gpuspy: {} is incomplete: writing it failed ({}); {} process(es), {} calls received{}; "
                           "{} bytes written, {} bytes of records received after the failure not written",
                           writer.path(), writer.error(), processes, calls, bad, writer.bytesWritten(),
                           writer.unwrittenBytes());
    return fmt::format("gpuspy: wrote {}: {} process(es), {} calls{}, {} bytes", writer.path(), processes, calls, bad,
                       writer.bytesWritten());
}

void noteWriteFailure(const CaptureWriter& writer, bool& said)
{
    if (said || !writer.failed()) return;
    said = true;
    say("gpuspy: cannot write {} ({}): the capture ends there; still collecting, and counting what "
                       "is not written\n", writer.path(), writer.error());
}

std::string defaultCaptureName(const char* prefix)
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    std::string name = fmt::format("{}-{}.gspy", prefix, stamp);
    struct stat st{};
    for (int i = 2; lstat(name.c_str(), &st) == 0 && i < 1000; ++i) name = fmt::format("{}-{}-{}.gspy", prefix, stamp, i);
    return name;
}

std::string exeDir()
{
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    buf[n] = '\0';
    std::string p(buf);
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? "." : p.substr(0, slash);
}

std::string absolute(const std::string& p)
{
    char buf[PATH_MAX];
    return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

namespace {
bool isFile(const std::string& p)
{
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
}  // namespace

// The first candidate that exists, or an error listing where we looked.
std::string locate(const char* envName, const std::vector<std::string>& candidates, const std::string& probe,
                   const char* what)
{
    if (const char* env = std::getenv(envName); env && *env) {
        if (!isFile(probe.empty() ? env : std::string(env) + "/" + probe))
            throw std::runtime_error(fmt::format("{}={} does not point at {}", envName, env, what));
        return absolute(env);
    }
    std::string looked;
    for (const std::string& c : candidates) {
        if (isFile(probe.empty() ? c : c + "/" + probe)) return absolute(c);
        looked += (looked.empty() ? "" : " and ") + c;
    }
    throw std::runtime_error(fmt::format("cannot find {} (looked at {}; set {})", what, looked, envName));
}

}  // namespace gpuspy::collect::cli
