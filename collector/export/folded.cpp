// collector/export/folded.cpp: folded stacks, one line per distinct stack with its summed weight.
#include "collector/export/folded.h"

#include "collector/export/common.h"
#include "collector/model/library_code.h"

#include <map>
#include <unordered_map>

namespace gpuspy::collect {

namespace {

using namespace exporting;

// A frame must not contain the separator, a line break, or end in what reads as the value.
std::string frameText(std::string s)
{
    for (char& c : s) {
        if (c == ';') c = ':';
        else if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    return s.empty() ? std::string("[unknown]") : s;
}

// A frame with line information carries its file and line, as py-spy writes them ("to_device (app.py:8)",
// "main (app.cu:41)"): two call sites of one function stay apart, as on the page's flame graph, and the
// line is what the user looks for.
std::string foldedName(const OutFrame& f)
{
    if (f.file.empty()) return f.function;
    const size_t slash = f.file.rfind('/');
    return f.function + " (" + f.file.substr(slash == std::string::npos ? 0 : slash + 1) + (f.line ? ":" + std::to_string(f.line) : "") + ")";
}

}  // namespace

bool parseFoldedMetric(std::string_view name, FoldedMetric& out)
{
    if (name == "blocked") out = FoldedMetric::Blocked;
    else if (name == "transfer") out = FoldedMetric::Transfer;
    else if (name == "launch") out = FoldedMetric::Launch;
    else if (name == "calls") out = FoldedMetric::Calls;
    else return false;
    return true;
}

std::string exportFolded(const Capture& capture, FoldedMetric metric)
{
    std::map<std::string, uint64_t> weights;
    // A repeated capture's runs shown merged: each run's stacks under a root frame of its own.
    const std::vector<uint32_t> runOf = mergedRunOfProcesses(capture);
    // Several captures read as one run: each process's stacks under its rank (or host and pid).
    const std::vector<std::string> memberOf = jobMemberFrames(capture);
    for (size_t pi = 0; pi < capture.processes.size(); ++pi) {
        const Process& p = capture.processes[pi];
        const std::string runFrame = (memberOf[pi].empty() ? "" : frameText(memberOf[pi]) + ";") +
                                     (runOf[pi] ? "run " + std::to_string(runOf[pi]) + ";" : "");
        std::unordered_map<uint32_t, std::string> prefixOfStack;
        ProcNames names(p);
        for (const wire::CallBody& c : p.calls) {
            const bool ok = c.result == 0 && !(c.flags & wire::kCallCapturing);
            uint64_t weight = 0;
            std::string leaf = frameText(names.label(c));
            switch (metric) {
            case FoldedMetric::Blocked:
                if (names.blocking(c)) weight = c.endNs > c.beginNs ? c.endNs - c.beginNs : 0;
                break;
            case FoldedMetric::Transfer:
                if (ok && c.category == wire::Category::Transfer) {
                    weight = c.args.transfer.bytes;
                    leaf += std::string(";") + wire::directionName(c.args.transfer.direction);
                }
                break;
            case FoldedMetric::Launch:
                if (ok && (c.category == wire::Category::Launch || c.category == wire::Category::Graph)) {
                    weight = c.endNs > c.beginNs ? c.endNs - c.beginNs : 0;
                    if (c.category == wire::Category::Launch) leaf += ";" + frameText(names.kernel(c));
                }
                break;
            case FoldedMetric::Calls: weight = 1; break;
            }
            if (!weight) continue;
            auto it = prefixOfStack.find(c.stackId);
            if (it == prefixOfStack.end()) {
                std::string prefix = runFrame;
                for (const OutFrame& f : stackFrames(p, c.stackId))
                    if (!isStaticRuntimeInternal(f.function)) prefix += frameText(foldedName(f)) + ";";
                if (prefix == runFrame) prefix += "[no stack];";
                it = prefixOfStack.emplace(c.stackId, std::move(prefix)).first;
            }
            weights[it->second + leaf] += weight;
        }
    }
    std::string out;
    for (const auto& [stack, weight] : weights) out += stack + " " + std::to_string(weight) + "\n";
    return out;
}

}  // namespace gpuspy::collect
