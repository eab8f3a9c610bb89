// collector/findings/streams.cpp: legacy-stream-serialisation. Work on the legacy default stream beside
// work on streams the program made blocking (cudaStreamCreate without cudaStreamNonBlocking, or per-thread
// default streams): the legacy stream waits for all of their work queued before its own, and they for its,
// so work the program meant to overlap may run one piece after another. Whether it did, and what it cost,
// only the run's dependency graph can say: the rule finds the mix and its call sites, with no saving of its
// own; the replay's nonblocking-streams fix predicts the saving, and a mix that costs nothing is dropped
// there (collector/replay/predict.cpp).
#include "collector/findings/rules.h"

namespace gpuspy::collect::detail::rules {

namespace {

constexpr uint64_t kLegacyHandle = 0x1, kPerThreadHandle = 0x2;  // CU_STREAM_LEGACY, CU_STREAM_PER_THREAD

}  // namespace

void addStreamUse(FindingAccs& F, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    const uint32_t pid = pv.proc ? pv.proc->pid : 0;
    if (c.category == wire::Category::Other && c.result == 0 && c.stream && ci.api->role == TimelineRole::StreamCreate) {
        if (c.args.raw[wire::kStreamFlagsSlot] & wire::kStreamNonBlocking) F.blockingStreams[pid].erase(c.stream);
        else F.blockingStreams[pid].insert(c.stream);
        return;
    }
    if (!hasFlag(c, wire::kCallDeviceWork) || hasFlag(c, wire::kCallCapturing) || c.result != 0) return;
    const bool perThread = hasFlag(c, wire::kCallPerThreadStream);
    const bool legacy = c.stream == kLegacyHandle || (c.stream == 0 && !perThread);
    bool blocking = c.stream == kPerThreadHandle || (c.stream == 0 && perThread);
    if (!legacy && !blocking) {
        auto made = F.blockingStreams.find(pid);
        blocking = made != F.blockingStreams.end() && made->second.count(c.stream);
    }
    if (!legacy && !blocking) return;
    LegacyMixAcc& a = F.legacyMix[{pid, c.device}];
    (legacy ? a.legacy : a.blocking).add(ci);
}

void legacyStream(Builder& b)
{
    const Context& cx = b.cx();
    for (const auto& [key, a] : cx.findings.legacyMix) {
        if (a.legacy.count < kMinRepeats || a.blocking.count < kMinRepeats) continue;
        Matched m;
        m.count = a.legacy.count + a.blocking.count;
        m.hostNs = a.legacy.hostNs + a.blocking.hostNs;
        for (const Matched* part : {&a.legacy, &a.blocking})
            for (const auto& [raw, ns] : part->sites) m.sites[raw] += ns;
        Finding& f = b.add(
            "legacy-stream-serialisation", m, 0,
            "GPU " + std::to_string(key.second) + " ran " + std::to_string(a.legacy.count) +
                " operation(s) on the legacy default stream" + siteLabel(cx, topSites(namedSites(cx, a.legacy.sites), 1)) +
                " beside " + std::to_string(a.blocking.count) + " on streams made blocking (cudaStreamCreate without "
                "cudaStreamNonBlocking, or per-thread default streams)" +
                siteLabel(cx, topSites(namedSites(cx, a.blocking.sites), 1)) +
                ": the legacy stream waits for all of their work queued before its own, and they wait for its, so work "
                "meant to overlap runs one piece after another. Make the streams with cudaStreamNonBlocking (or give the "
                "default stream's work a stream of its own, or build with nvcc --default-stream per-thread); where the "
                "default stream's work reads what another stream wrote, keep that one ordering with cudaEventRecord + "
                "cudaStreamWaitEvent.");
        f.severity = "info";
        f.evidence = {{"legacy_stream_ops", double(a.legacy.count)}, {"blocking_stream_ops", double(a.blocking.count)},
                      {"device", double(key.second)}};
    }
}

}  // namespace gpuspy::collect::detail::rules
