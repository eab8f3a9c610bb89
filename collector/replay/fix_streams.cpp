// collector/replay/fix_streams.cpp: the fixes of how streams are made (fixes.h).
#include "collector/replay/fixes.h"

namespace gpuspy::collect::replay {

FixEffect nonBlockingStreams(RunGraph& g)
{
    FixEffect fx;
    for (Op& op : g.ops) {
        bool changed = false, kept = false;
        const Call* c = op.call != kNone ? &g.calls[op.call] : nullptr;
        // A copy to the host on the legacy stream: the host reads what it copied, so the fixed program
        // still orders it after the work that wrote it (an event wait or a synchronize).
        const bool hostReads = c && c->kind == CallKind::Copy && c->direction == wire::Direction::DtoH;
        for (uint32_t k = 0; k < op.waitsCount; ++k) {
            EventWait& ew = g.eventWaits[op.waitsFirst + k];
            if (!ew.legacy || !ew.upTo) continue;
            if (hostReads) {
                kept = true;
                continue;
            }
            ew.upTo = 0;
            changed = true;
        }
        fx.changed += changed;
        fx.kept += kept && !changed;
    }
    if (fx.kept) fx.keptWhy = "copies to the host, which read what the other streams wrote";
    if (fx.changed) {
        fx.assumed = fx.changed;
        fx.assumption = "the default stream's work does not read what the other streams wrote in flight (where it "
                        "does, one event wait keeps that ordering)";
    }
    return fx;
}

}  // namespace gpuspy::collect::replay
