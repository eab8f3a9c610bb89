// collector/cli/runs.cpp: `--run K` of report, export and view on a repeated capture (record --repeat),
// and the label of a capture shown with its runs merged.
#include "collector/cli/cli.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpuspy::collect::cli {

void selectRun(Capture& capture, long run)
{
    if (run <= 0) return;
    if (capture.runs.size() < 2) {
        if (run == 1) return;
        throw std::runtime_error(fmt::format("--run {}: the capture holds one run (it was not recorded with --repeat)", run));
    }
    const RunInfo* chosen = nullptr;
    for (const RunInfo& r : capture.runs)
        if (long(r.run) + 1 == run) chosen = &r;
    if (!chosen)
        throw std::runtime_error(fmt::format("--run {}: the capture holds runs 1 to {}", run, capture.runs.size()));
    RunInfo one = *chosen;
    std::vector<Process> kept;
    one.processes.clear();
    for (size_t i : chosen->processes)
        if (i < capture.processes.size()) {
            one.processes.push_back(kept.size());
            kept.push_back(std::move(capture.processes[i]));
        }
    capture.processes = std::move(kept);
    capture.runs = {std::move(one)};
}

std::string mergedRunsNote(const Capture& capture)
{
    if (capture.runs.size() < 2) return "";
    return fmt::format("the capture holds {} runs of the command (record --repeat), merged here: each process is "
                       "labelled with its run; --run K shows run K alone",
                       capture.runs.size());
}

}  // namespace gpuspy::collect::cli
