// collector/cli/captures_as_one.cpp: what `report` needs to read several captures (the ranks or nodes of
// one job, each written on its own host's clock) as one run: each capture's clock, read in a first pass
// (its processes' wall-clock pairs and its collectives' ends), aligned on the first capture's
// (collector/analyze/clock_align.h); the second pass reads every capture shifted by its alignment.
#include "collector/cli/cli.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/analyze/clock_align.h"

namespace gpuspy::collect::cli {

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

}  // namespace gpuspy::collect::cli
#endif
