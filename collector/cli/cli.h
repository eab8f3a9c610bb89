// collector/cli/cli.h: the gpuspy subcommands (one file each, cmd_<command>.cpp) and what they share:
// argument parsing, error reporting, and finishing a capture (symbolize, write, report).
#pragma once

#include "collector/ingest/capture_file.h"
#include "collector/model/model.h"
#include "collector/compare/repeat.h"

#include <sys/types.h>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpuspy::collect {
struct Report;
struct ReportOptions;
struct ClockAlignment;
}

namespace gpuspy::collect::cli {

// Each takes the arguments after the command name and returns the process exit status.
int runRecord(int argc, char** argv);
int runCollect(int argc, char** argv);
int runCtl(int argc, char** argv);
int runReport(int argc, char** argv);
int runDump(int argc, char** argv);
int runExport(int argc, char** argv);
int runView(int argc, char** argv);
int runDiff(int argc, char** argv);
int runAttach(int argc, char** argv);
int runTop(int argc, char** argv);
int runWhatIf(int argc, char** argv);

// A command line the command cannot accept: printed as one line with a hint, exit status 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline constexpr int kExitUsage = 2;
inline constexpr int kExitFailure = 1;

// Reads options in order: "-o X", "-oX", "--output X", "--output=X"; stops at "--" or the first
// positional argument when asked to.
class ArgReader {
public:
    ArgReader(std::string command, int argc, char** argv) : m_command(std::move(command)), m_argc(argc), m_argv(argv) {}

    bool done() const { return m_i >= m_argc; }
    std::string_view peek() const { return m_argv[m_i]; }
    bool isOption() const { return !done() && m_argv[m_i][0] == '-' && m_argv[m_i][1] != '\0'; }
    // The current argument is one of `names`: consume it.
    bool flag(std::initializer_list<std::string_view> names);
    // The current argument is one of `names` with a value: consume both.
    bool value(std::initializer_list<std::string_view> names, std::string& out);
    std::string positional() { return m_argv[m_i++]; }
    // The current argument is the command's one FILE operand, or `--` followed by it: consume it.
    // A second operand, or an option no earlier test took, is a UsageError.
    void fileOperand(std::string& file);
    // The current argument is one more FILE operand of a command that takes several (report, export,
    // view), or `--` followed by the rest of them: consume it (them). An option no earlier test took is a
    // UsageError.
    void fileOperands(std::vector<std::string>& files);
    // Everything from the current argument on.
    int index() const { return m_i; }
    void skip(int n = 1) { m_i += n; }
    [[noreturn]] void unknown() const;

private:
    std::string m_command;
    int m_argc;
    char** m_argv;
    int m_i = 0;
};

// Parses a decimal count within [lo, hi] or throws UsageError naming the option.
long parseNumber(std::string_view option, const std::string& text, long lo, long hi);

// Whether the report code (collector/analyze, collector/report) is part of this build.
bool reportBuilt();
// The value of --format for `command` (report, record): text, json or csv, else a UsageError.
void checkReportFormat(const char* command, const std::string& format);
bool stdoutIsTerminal();
// The text report's width: COLUMNS, else the terminal's (stdout), else 0 (the default, 100).
size_t terminalWidth();

// What the report shows and how.
struct ReportRequest {
    std::string format = "text";  // text, json or csv
    size_t top = 10;
    int pid = -1;  // only this process; -1 for all
    bool color = false;
    long run = 0;  // only this run (1-based) of a repeated capture (record --repeat); 0 for the default
    bool byLaunchConfig = false;  // kernels split by grid and block
    size_t width = 0;             // text: columns (0: 100)
    bool verbose = false;         // text: every finding's evidence, kernels' full names
};

// THE reading of the captures `paths` as one run (report, export and view; collector/cli/captures_as_one.cpp).
// One path: readCapture as it is. Several (the ranks or nodes of one job, each on its own host's clock):
// each put on the first's clock (alignCaptures) and read with `options` shifted by its alignment, their
// processes in one Capture in the paths' order, each naming its file (Process::captureName); `info` holds
// the first damage (named by its file) and whether every capture was finished; `clocks`, when given, gets
// the alignments. Their runs (record --repeat) are not kept: the processes of every run are merged.
// Throws std::runtime_error naming the file that cannot be read; without the report code in the build,
// several captures are refused (the alignment is collector/analyze's).
Capture readCapturesAsOne(const std::vector<std::string>& paths, const ReadOptions& options, ReadInfo& info,
                          std::vector<ClockAlignment>* clocks = nullptr);

// The runs of a repeated capture (`record --repeat N`) in the commands that show processes (report,
// export, view): `--run K` keeps run K's processes only (a capture of one run is its own run 1); run 0
// keeps them all (the exports then label each process with its run: mergedRunOfProcesses). Throws
// std::runtime_error for a run the capture lacks.
void selectRun(Capture& capture, long run);
// "the capture holds N runs of the command (record --repeat), merged here: --run K shows one" for a
// capture whose runs are all kept, else "".
std::string mergedRunsNote(const Capture& capture);
// What was read to make a report: the processes' definitions and totals (not their records), and what
// the reader noticed (damage, an unfinished capture).
// A capture of repeated runs (`record --repeat N`) is reported as its run of median wall time, and
// `runs` holds every run's figures and their spread; otherwise `runs` is empty.
struct ReportSource {
    Capture capture;
    ReadInfo info;
    RunsSummary runs;
    size_t runsInCapture = 0;  // the capture's runs before --run chose one (0: not recorded with --repeat)
};
// The report of the capture at `path` as `gpuspy report` prints it (ending in a newline), read through
// the streaming analysis: the records go from the reader to the analysis and are not kept, so memory
// does not grow with the capture. `gpuspy record` prints its report this way too, from the capture it
// has just written: one code path, the same bytes. Throws std::runtime_error as readCapture does.
// Without the report code in the build: a summary of the processes.
std::string reportOfCapture(const std::string& path, const ReportRequest& request, ReportSource& source);
// Several captures (the ranks or nodes of one job) as one run: each put on the first's clock
// (alignCaptures), one report of all their processes, the alignment in its notes and JSON. --run is
// not taken with several captures. One path: reportOfCapture.
std::string reportOfCaptures(const std::vector<std::string>& paths, const ReportRequest& request, ReportSource& source);

// The Report behind reportOfCapture, for commands that work on it (diff). Only with the report code
// in the build (GPUSPY_HAVE_REPORT). The streaming read keeps up to kReplayCallBudget calls of the capture
// in memory for the replay that predicts the findings' savings (collector/replay/predict.h); the
// processes past it keep their rules' formulas, and a note says so.
Report analyzeCapture(const std::string& path, const ReportRequest& request, ReportSource& source);
Report analyzeCaptures(const std::vector<std::string>& paths, const ReportRequest& request, ReportSource& source);
// How each capture of `paths` goes onto the first's clock: a first read of each (its wall-clock pairs,
// its collectives' ends) through collector/analyze/clock_align.h (collector/cli/captures_as_one.cpp).
std::vector<ClockAlignment> alignCaptures(const std::vector<std::string>& paths);
// The alignment of several captures in a report: Report::clockAlignment and its notes (nothing for one).
void noteAlignment(Report& report, const std::vector<ClockAlignment>& clocks);
// The notes alone (for the exports that carry no report; empty for one capture).
std::vector<std::string> alignmentNotes(const std::vector<ClockAlignment>& clocks);
inline constexpr uint64_t kReplayCallBudget = 500'000;  // about 50 MiB of calls, 200 MiB with the graph
// kReplayCallBudget, or for tests only GPUSPY_TEST_REPLAY_CALL_BUDGET (a positive count, read by the CLI
// alone) so that a test's program of a few hundred calls is past it (tests/savings).
uint64_t replayCallBudget();

// analyze() of a capture held in memory, then the replay's predictions of its findings' savings.
Report analyzeAndPredict(const Capture& capture, const ReportOptions& options);

// The two sides of a comparison (`gpuspy diff`, `view --diff`): `A.gspy B.gspy`, or `--before A1.gspy
// [A2.gspy...] --after B1.gspy [B2.gspy...]`, each side's captures (the ranks or nodes of one job) read
// as one run (readCapturesAsOne, through analyzeCaptures). collector/cli/cmd_diff.cpp.
struct DiffSides {
    std::vector<std::string> a, b;
};
// The current argument is --before or --after: consume it and the captures that follow it up to the
// next option (a capture named like an option: ./-x.gspy), and say true; false when it is neither.
bool readDiffSide(const char* command, ArgReader& args, DiffSides& sides);
// The sides once the command line is read: the two `positional` operands, or --before and --after,
// not both; a UsageError for `command` ("diff", "view --diff") otherwise.
void settleDiffSides(const std::string& command, const std::vector<std::string>& positional, DiffSides& sides);
// A side's name in the diff's output: its capture, or its captures joined by ", ".
std::string diffSideName(const std::vector<std::string>& paths);

// The JSON of `gpuspy diff --format json A B` (with the runs' spreads of repeated captures), for the
// viewer's diff page; each side one capture or several read as one run. Only with the report code in the
// build; throws std::runtime_error ("gpuspy diff: ...") for a capture that cannot be compared.
std::string diffJsonOfCaptures(const DiffSides& sides, size_t top);

// Symbolizes every process (when the symbolizer is built), writes their symbols and the End chunk.
void finishCapture(Capture& capture, CaptureWriter& writer);

// "gpuspy: wrote FILE: N process(es), M calls, B bytes" (and the bad streams if any), or, when a
// write failed, that FILE is incomplete, why, and how much was not written.
std::string captureSummary(const CaptureWriter& writer, size_t processes, uint64_t calls, uint64_t badStreams);
// The first time the writer has failed: one line on stderr saying so (`said` remembers it).
void noteWriteFailure(const CaptureWriter& writer, bool& said);

// The directory of the running gpuspy executable ("." when unknown); a path made absolute when it exists.
std::string exeDir();
std::string absolute(const std::string& p);
// The first candidate that exists (with `probe` inside it, when given), or $envName when set; else
// throws std::runtime_error listing where it looked.
std::string locate(const char* envName, const std::vector<std::string>& candidates, const std::string& probe,
                   const char* what);

// `record -o` names: %p (gpuspy's pid), %h (host name), %q{VAR} (VAR's value, empty when unset), as nsys.
std::string expandOutputName(const std::string& pattern);

// "PREFIX-YYYYmmdd-HHMMSS.gspy" in the current directory, with a suffix if that exists already.
std::string defaultCaptureName(const char* prefix = "gpuspy");

}  // namespace gpuspy::collect::cli

namespace gpuspy::collect::cli {

// SIGINT and SIGTERM: counted, wake poll() through `wakeFd`, and are forwarded to the pid given to
// forwardSignalsTo() unless the kernel sent them to the whole foreground group (the terminal's
// Ctrl-C reaches the child by itself). SIGHUP is forwarded the same way but stops nothing (see
// hungUp()). SIGCHLD only wakes poll(). SIGPIPE and SIGXFSZ are ignored: their writes fail instead.
// A signal that was ignored when gpuspy started is ignored again in the command (see
// childSignalDispositions), not in gpuspy.
void installSignalHandlers(int wakeFd);
// In a forked child before exec: the dispositions and signal mask gpuspy itself inherited.
// Async-signal-safe.
void childSignalDispositions();
void forwardSignalsTo(pid_t pid);
unsigned signalsReceived();
int lastSignal();
// Whether a SIGHUP arrived; on the first call after one, standard output and error that were
// terminals are pointed at /dev/null (a hung-up terminal fails every write).
bool hungUp();
// SIGINT, SIGTERM and SIGCHLD back to their defaults; SIGHUP, SIGPIPE and SIGXFSZ ignored: gpuspy is
// finishing its capture.
void restoreSignalHandlers();

}  // namespace gpuspy::collect::cli
