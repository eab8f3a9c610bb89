// collector/findings/dropped.cpp: dropped-records: records the shim could not deliver, and streams cut short.
#include "collector/findings/rules.h"

namespace gpuspy::collect::detail::rules {

void droppedRecords(Builder& b, const Report& r)
{
    uint64_t dropped = 0, made = 0, cut = 0;
    std::string cutText;
    for (const ProcessSummary& p : r.processes) {
        dropped += p.droppedRecords;
        made += p.recordsMade;
        if (!p.streamError.empty()) {
            ++cut;
            cutText += " pid " + std::to_string(p.pid) + ": " + p.streamError + ".";
        }
    }
    if (!dropped && !cut && !r.badStreams) return;
    Matched m;
    m.count = dropped;
    std::string msg;
    if (dropped)
        msg = std::to_string(dropped) + (made ? " of " + std::to_string(made) : std::string()) +
              " records were dropped (gpuspy's queue was full or its writer failed): every count and time in this "
              "report is a lower bound. Record with a smaller --stack-depth, or --no-gpu-time, to lighten the load.";
    if (cut || r.badStreams)
        msg += std::string(msg.empty() ? "" : " ") + std::to_string(cut + r.badStreams) +
               (cut + r.badStreams == 1 ? " stream was" : " streams were") +
               " cut short; their records up to the cut are included." + cutText;
    Finding& f = b.add("dropped-records", m, 0, msg);
    f.severity = made && double(dropped) > 0.01 * double(made) ? "high" : "medium";
    f.evidence = {{"dropped", double(dropped)}, {"records", double(made)}, {"cut_streams", double(cut + r.badStreams)}};
}

}  // namespace gpuspy::collect::detail::rules
