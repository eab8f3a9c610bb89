// collector/cli/captures_as_one.cpp: THE way report, export and view read several captures (the ranks or
// nodes of one job, each written on its own host's clock) as one run: each capture's clock, read in a
// first pass (its processes' wall-clock pairs and its collectives' ends), aligned on the first capture's
// (collector/analyze/clock_align.h); the second pass reads every capture shifted by its alignment, each
// process named by the capture it came from (Process::captureName).
#include "collector/cli/cli.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/analyze/clock_align.h"
#endif

#include <stdexcept>

namespace gpuspy::collect::cli {

#if GPUSPY_HAVE_REPORT
std::vector<ClockAlignment> alignCaptures(const std::vector<std::string>& paths)
{
    std::vector<CaptureClock> clocks;
    for (const std::string& path : paths) {
        StreamAnalyzer analyzer(ReportOptions{});
        ReadOptions read;
        read.keepEvents = false;
        read.onRecord = [&](const Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); };
        read.onProcess = [&](const Process& p) { analyzer.onProcess(p); };
        const Capture capture = readCapture(path, read);
        Report r = analyzer.finish(capture.badStreams);
        CaptureClock c;
        c.name = path;
        // The tightest pair of its processes (one host: they share the clock).
        for (const Process& p : capture.processes) {
            if (c.host.empty()) c.host = p.identity.host;
            for (const ClockPair& pair : {p.identity.start, p.identity.end})
                if (pair.known() && (!c.pair.known() || pair.errorNs < c.pair.errorNs)) c.pair = pair;
        }
        c.ends = std::move(r.collectiveEnds);
        clocks.push_back(std::move(c));
    }
    return alignClocks(clocks);
}

void noteAlignment(Report& report, const std::vector<ClockAlignment>& clocks)
{
    if (clocks.size() < 2) return;
    report.clockAlignment = clocks;
    for (std::string& note : clockAlignmentNotes(clocks)) report.notes.push_back(std::move(note));
}

std::vector<std::string> alignmentNotes(const std::vector<ClockAlignment>& clocks)
{
    return clocks.size() < 2 ? std::vector<std::string>{} : clockAlignmentNotes(clocks);
}
#endif

Capture readCapturesAsOne(const std::vector<std::string>& paths, const ReadOptions& options, ReadInfo& info,
                          std::vector<ClockAlignment>* clocks)
{
    if (paths.empty()) throw std::runtime_error("no capture to read");
    if (paths.size() == 1) return readCapture(paths.front(), options, &info);
#if GPUSPY_HAVE_REPORT
    // Several captures as one run: each read on the first's clock, its processes kept apart (pids of
    // several hosts may be the same: each process names its capture and host).
    const std::vector<ClockAlignment> aligned = alignCaptures(paths);
    Capture all;
    info = ReadInfo{};
    for (size_t i = 0; i < paths.size(); ++i) {
        ReadOptions read = options;
        read.timeShiftNs = aligned[i].shiftNs;
        read.captureName = paths[i];
        ReadInfo one;
        Capture c = readCapture(paths[i], read, &one);
        for (Process& p : c.processes) all.processes.push_back(std::move(p));
        for (OutsideProcess& p : c.outside) all.outside.push_back(std::move(p));
        all.badStreams += c.badStreams;
        info.finished = info.finished && one.finished;
        if (info.damage.empty() && !one.damage.empty()) info.damage = paths[i] + ": " + one.damage;
    }
    if (clocks) *clocks = aligned;
    return all;
#else
    (void)clocks;
    throw std::runtime_error("reading several captures as one run needs the clock alignment of collector/analyze, "
                             "which is not built in this gpuspy");
#endif
}

}  // namespace gpuspy::collect::cli
