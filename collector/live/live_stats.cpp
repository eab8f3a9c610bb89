// collector/live/live_stats.cpp: each tick, the records since the last one through the report's analysis.
#include "collector/live/live_stats.h"

#include "collector/analyze/analyze.h"
#include "collector/ingest/ingest.h"
#include "collector/report/text_parts.h"
#if GPUSPY_HAVE_SYMBOLIZE
#include "collector/symbolize/symbolize.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace gpuspy::collect {

namespace {

constexpr uint64_t kNoAge = 1000000000ull * 3600 * 24 * 365;  // records leave at the tick, not by age
constexpr uint64_t kPendingBytes = 32u << 20;  // a burst bigger than this between two ticks loses its oldest
constexpr size_t kTopSites = 5;

LiveProcess::Device& liveDevice(LiveProcess& lp, int id)
{
    auto dev = std::find_if(lp.devices.begin(), lp.devices.end(), [&](const auto& x) { return x.id == id; });
    if (dev != lp.devices.end()) return *dev;
    lp.devices.push_back({});
    lp.devices.back().id = id;
    return lp.devices.back();
}

}  // namespace

struct LiveSymbols {
#if GPUSPY_HAVE_SYMBOLIZE
    SymbolCache cache;
#endif
    std::unordered_map<uint32_t, std::unordered_map<uint64_t, std::vector<Frame>>> byStream;
};

LiveStats::LiveStats(StreamListener* also)
    : m_also(also), m_symbols(std::make_unique<LiveSymbols>()), m_pending(kNoAge, kPendingBytes)
{
}

LiveStats::~LiveStats() = default;

void LiveStats::onHeader(uint32_t stream, const wire::StreamHeader& header)
{
    m_pending.onHeader(stream, header);
    m_procs[stream].pid = header.pid;
    if (m_also) m_also->onHeader(stream, header);
}

void LiveStats::onRecord(uint32_t stream, const wire::RecordView& record)
{
    const bool event = record.type == wire::RecordType::Call || record.type == wire::RecordType::GpuSpan ||
                       record.type == wire::RecordType::Nvtx;
    if (m_watched || !event) m_pending.onRecord(stream, record);
    if (record.type == wire::RecordType::Tally || record.type == wire::RecordType::Window) {
        // The shim's running totals, read as they come (the analysis sees only each tick's calls).
        LiveProcess& lp = m_procs[stream];
        uint64_t leftOut[wire::kWindowCategories] = {};
        if (record.type == wire::RecordType::Tally) {
            const auto t = record.as<wire::TallyBody>();
            lp.recording = t.window != 0;
            lp.overheadNs = std::max(lp.overheadNs, t.overheadNs);
            lp.droppedRecords = std::max(lp.droppedRecords, t.dropped);
            lp.calls = std::max(lp.calls, t.calls);
            std::copy(std::begin(t.leftOut), std::end(t.leftOut), leftOut);
        } else {
            const auto w = record.as<wire::WindowBody>();
            if (w.edge == wire::WindowEdge::Begin) lp.recording = true;
            if (w.edge == wire::WindowEdge::End) lp.recording = false;
            std::copy(std::begin(w.leftOut), std::end(w.leftOut), leftOut);
        }
        for (size_t c = 0; c < wire::kWindowCategories; ++c) {
            if (!leftOut[c]) continue;
            uint64_t& n = lp.notRecorded[wire::categoryName(wire::Category(c))];
            n = std::max(n, leftOut[c]);
        }
    }
    if (record.type == wire::RecordType::DeviceDef || record.type == wire::RecordType::DeviceInfo) {
        // A device's name and identity come before the first call on it (the shim sends definitions
        // first): its series carry the same labels from their first figure on.
        Process ids;
        applyRecord(ids, record, false);
        LiveProcess& lp = m_procs[stream];
        for (const auto& [id, name] : ids.devices) liveDevice(lp, id).name = name;
        for (const auto& [id, x] : ids.deviceIds) {
            LiveProcess::Device& d = liveDevice(lp, id);
            d.uuid = x.uuid;
            d.pciBusId = x.pciBusId;
        }
    }
    if (record.type == wire::RecordType::Call) {
        // Launches by device, counted from the calls themselves (the report counts them per kernel).
        const auto c = record.as<wire::CallBody>();
        if (c.category == wire::Category::Launch && c.result == 0 && !(c.flags & wire::kCallCapturing)) {
            LiveProcess::Device& dev = liveDevice(m_procs[stream], c.device);
            ++dev.pendingLaunches;
            ++dev.launchesTotal;
        }
    }
    if (m_also) m_also->onRecord(stream, record);
}

void LiveStats::onFinished(uint32_t stream)
{
    m_pending.onFinished(stream);
    auto it = m_procs.find(stream);
    if (it != m_procs.end()) it->second.connected = false;
    m_ended[stream] = false;
    if (m_also) m_also->onFinished(stream);
}

void LiveStats::tick(uint64_t nowNs, bool analyze)
{
    const uint64_t interval = m_lastTickNs ? nowNs - m_lastTickNs : 1000000000ull;
    m_lastTickNs = nowNs;
    ++m_ticks;
    // Processes that finished before the last tick have had their last records analyzed: forget them.
    for (auto it = m_ended.begin(); it != m_ended.end();) {
        if (!it->second) {
            it->second = true;  // this tick analyzes its last records
            ++it;
            continue;
        }
        m_procs.erase(it->first);
        m_symbols->byStream.erase(it->first);
        it = m_ended.erase(it);
    }
    for (auto& [stream, lp] : m_procs) {
        lp.intervalNs = interval;
        lp.launches = 0;
        for (auto& d : lp.devices) {
            d.busyNs = 0;
            d.busyRatio = 0;
            d.launches = d.pendingLaunches;
            d.pendingLaunches = 0;
        }
        for (auto& [k, t] : lp.transfers) t.bytes = t.hostNs = t.gpuNs = 0;
        for (auto& [k, s] : lp.syncs) s.blockedNs = 0;
        lp.topSites.clear();
    }
    if (analyze) {
        for (const auto& s : m_pending.snapshot()) {
            auto it = m_procs.find(s.stream);
            if (it != m_procs.end()) analyzeStream(s, it->second);
        }
    }
    m_pending.clearEvents();
}

void LiveStats::analyzeStream(const FlightRecorder::StreamBytes& s, LiveProcess& lp)
{
    ReportOptions options;
    options.top = kTopSites;
    StreamAnalyzer analyzer(options);
    StreamIngest ingest;
    ingest.setKeepRaw(false);
    ingest.setKeepEvents(false);
    ingest.setObserver([&](const Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); });
    ingest.feed(s.bytes.data(), s.bytes.size());
    Process& proc = ingest.process();
    lp.pid = proc.pid;
    lp.command = proc.command;

    // Call sites are named by symbols: each address is looked up once per process, then reused.
    LiveSymbols& symbols = *m_symbols;
    auto& known = symbols.byStream[s.stream];
#if GPUSPY_HAVE_SYMBOLIZE
    Process fresh;
    fresh.modules = proc.modules;
    for (const auto& [id, pcs] : proc.stacks)
        for (uint64_t pc : pcs)
            if (!known.count(pc)) fresh.stacks[id] = pcs;
    if (!fresh.stacks.empty()) {
        try {
            symbols.cache.symbolizeProcess(fresh);
        } catch (const std::exception&) {
            // Unreadable binaries: the sites are named by module+offset.
        }
        for (auto& [pc, frames] : fresh.symbols) known[pc] = std::move(frames);
    }
#endif
    for (const auto& [id, pcs] : proc.stacks)
        for (uint64_t pc : pcs) {
            auto k = known.find(pc);
            if (k != known.end()) proc.symbols[pc] = k->second;
        }
    analyzer.onProcess(proc);
    const Report r = analyzer.finish(0);

    for (const DeviceSummary& d : r.devices) {
        LiveProcess::Device& dev = liveDevice(lp, d.id);
        dev.name = d.name;
        dev.busyNs = d.busyNs;
        dev.busyRatio = std::min(1.0, double(d.busyNs) / double(lp.intervalNs));
        dev.busyBasis = d.busyBasis;
    }
    lp.launches = r.launches.count;
    lp.launchesTotal += r.launches.count;
    // The ended threads' ThreadStats (kept with the definitions) or the latest Tally, whichever says
    // more: a Tally covers the running threads too, ThreadStats come after the last Tally.
    for (const auto& p : r.processes) {
        lp.droppedRecords = std::max(lp.droppedRecords, p.droppedRecords);
        lp.overheadNs = std::max(lp.overheadNs, p.gpuspyOverheadNs);
    }
    for (const KernelRow& k : r.kernels) {
        LiveProcess::Kernel& x = lp.kernels[textparts::foldTemplates(k.name)];
        x.launches += k.count;
        x.gpuNs += k.estimatedGpuNs;
    }
    for (const TransferRow& t : r.transfers) {
        LiveProcess::Transfer& x = lp.transfers[t.direction + "/" + t.hostMemory + "/" + t.mode];
        x.direction = t.direction;
        x.hostMemory = t.hostMemory;
        x.mode = t.mode;
        x.bytes += t.bytes;
        x.hostNs += t.host.total;
        x.gpuNs += t.gpuNs;
        x.bytesTotal += t.bytes;
        x.hostNsTotal += t.host.total;
        x.countTotal += t.count;
    }
    for (const SyncRow& sr : r.syncs) {
        LiveProcess::Sync& x = lp.syncs[sr.kind];
        x.blockedNs += sr.blockedNs;
        x.blockedNsTotal += sr.blockedNs;
        x.countTotal += sr.count;
    }
    std::vector<const CallSite*> sites;
    for (const CallSite& c : r.callsites) sites.push_back(&c);
    std::sort(sites.begin(), sites.end(), [](const CallSite* a, const CallSite* b) { return a->ns > b->ns; });
    for (size_t i = 0; i < sites.size() && i < kTopSites; ++i)
        lp.topSites.push_back({sites[i]->label, sites[i]->category, sites[i]->count, sites[i]->ns});
    for (const Finding& f : r.findings) {
        LiveProcess::Finding& x = lp.findings[f.rule];
        x.severity = f.severity;
        x.message = f.message;
        ++x.ticks;
        x.lastTick = m_ticks;
    }
}

std::string LiveStats::topText(size_t width) const
{
    if (width < 40) width = 40;
    // A line too long for the terminal ends in "..." at a word's end where one is near.
    auto clip = [width](std::string s) {
        if (s.size() <= width) return s;
        size_t cut = width - 3;
        const size_t space = s.rfind(' ', cut);
        if (space != std::string::npos && space > width / 2) cut = space;
        s.resize(cut);
        return s + "...";
    };
    std::string out;
    std::vector<const LiveProcess*> procs;
    for (const auto& [stream, lp] : m_procs) procs.push_back(&lp);
    auto busy = [](const LiveProcess* p) {
        double b = 0;
        for (const auto& d : p->devices) b += d.busyRatio;
        return b;
    };
    std::stable_sort(procs.begin(), procs.end(), [&](auto* a, auto* b) { return busy(a) > busy(b); });
    out += fmt::format("gpuspy top: {} process(es); figures per second over the last {:.1f} s\n", procs.size(),
                       procs.empty() || !procs.front()->intervalNs ? 1.0 : double(procs.front()->intervalNs) / 1e9);
    for (const LiveProcess* p : procs) {
        const double secs = p->intervalNs ? double(p->intervalNs) / 1e9 : 1.0;
        out += "\n";
        out += clip(fmt::format("pid {}  {}{}", p->pid, p->command, p->connected ? "" : "  (ended)")) + "\n";
        for (const auto& d : p->devices)
            out += clip(fmt::format("  GPU {} {}: busy {:.1f}% ({})", d.id, d.name, 100 * d.busyRatio, d.busyBasis)) + "\n";
        out += fmt::format("  launches/s {:.0f}  (total {})\n", double(p->launches) / secs, p->launchesTotal);
        for (const auto& [k, t] : p->transfers) {
            if (!t.bytes) continue;
            const double gbps = t.gpuNs ? double(t.bytes) / double(t.gpuNs) : t.hostNs ? double(t.bytes) / double(t.hostNs) : 0;
            out += fmt::format("  copy {} {} {}: {:.3f} GB/s moved, {:.2f} GB/s while copying ({})\n", t.direction,
                               t.hostMemory, t.mode, double(t.bytes) / secs / 1e9, gbps, t.gpuNs ? "gpu" : "host");
        }
        uint64_t blocked = 0;
        std::string kinds;
        for (const auto& [kind, s] : p->syncs) {
            if (!s.blockedNs) continue;
            blocked += s.blockedNs;
            kinds += fmt::format("{}{} {:.1f} ms", kinds.empty() ? "" : ", ", kind, double(s.blockedNs) / 1e6 / secs);
        }
        out += fmt::format("  blocked in syncs {:.1f} ms/s{}\n", double(blocked) / 1e6 / secs,
                           kinds.empty() ? "" : " (" + kinds + ")");
        if (!p->topSites.empty()) out += "  top call sites (host time):\n";
        for (const auto& s : p->topSites)
            out += clip(fmt::format("    {:>8.2f} ms {:>7} calls  {:<8} {}", double(s.ns) / 1e6, s.count, s.category, s.label)) + "\n";
        if (!p->findings.empty()) out += "  findings so far (over the run, not the last second's figures):\n";
        for (const auto& [rule, f] : p->findings)
            out += clip(fmt::format("    [{}] {} (in {} of {} s): {}", f.severity, rule, f.ticks, m_ticks, f.message)) + "\n";
        if (!p->notRecorded.empty()) {
            std::string calls;
            for (const auto& [category, n] : p->notRecorded) calls += fmt::format("{}{} {}", calls.empty() ? "" : ", ", n, category);
            out += clip(fmt::format("  calls not recorded (made while paused): {}", calls)) + "\n";
        }
        if (p->droppedRecords) out += fmt::format("  records the shim dropped: {}\n", p->droppedRecords);
    }
    return out;
}

}  // namespace gpuspy::collect
