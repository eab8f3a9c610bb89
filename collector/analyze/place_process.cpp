// collector/analyze/place_process.cpp: a whole process's calls through the device timeline, as the streaming
// analysis places them (placeOnTimeline), for the stages that read a capture held in memory (the
// exports' timelines, the replay).
#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::detail {

void placeProcess(const Process& p, const std::vector<const wire::CallBody*>& calls,
                  const std::function<void(const Placement&, const StreamId&)>& out)
{
    // The spans by call number, each call's handed over in one scratch vector: no allocation per call
    // for captures of millions.
    std::vector<wire::GpuSpanBody> bySeq(p.spans);
    auto bySeqLess = [](const wire::GpuSpanBody& a, const wire::GpuSpanBody& b) { return a.seq < b.seq; };
    std::stable_sort(bySeq.begin(), bySeq.end(), bySeqLess);
    std::vector<wire::GpuSpanBody> scratch;
    // The sink only reads the stream table, which add() has completed before it places anything.
    const DeviceTimeline* self = nullptr;
    DeviceTimeline timeline([&](const Placement& pl) { out(pl, self->streamOf(pl.stream)); });
    self = &timeline;
    std::unordered_map<uint16_t, ApiClass> apis;
    for (const wire::CallBody* c : calls) {
        auto api = apis.find(c->apiId);
        if (api == apis.end()) {
            auto def = p.apis.find(c->apiId);
            api = apis.emplace(c->apiId, classifyApi(def != p.apis.end() ? def->second.name : "api#" + std::to_string(c->apiId)))
                      .first;
        }
        const auto [lo, hi] = std::equal_range(bySeq.begin(), bySeq.end(), wire::GpuSpanBody{c->seq, 0, 0, 0, 0}, bySeqLess);
        scratch.assign(lo, hi);
        bool upperBound = false;
        for (const wire::GpuSpanBody& s : scratch) upperBound = upperBound || gpuSpanIsUpperBound(*c, s);
        placeOnTimeline(timeline, api->second, *c, scratch.empty() ? nullptr : &scratch, upperBound);
    }
    timeline.finish();
}

}  // namespace gpuspy::collect::detail
