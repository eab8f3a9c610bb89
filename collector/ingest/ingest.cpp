// collector/ingest/ingest.cpp: validated records into the model, and the incremental per-stream ingest.
#include "collector/ingest/ingest.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gpuspy::collect {

namespace {

constexpr size_t kKeptCapacity = 64u << 10;  // a raw buffer larger than this is trimmed once taken

void seen(Process& p, uint64_t ns)
{
    if (ns > p.lastNs) p.lastNs = ns;
}

std::string tailString(std::string_view s)
{
    return std::string(s);
}

// A device's UUID as nvidia-smi and DCGM exporter print it; empty when the shim could not ask.
std::string uuidText(const uint8_t (&u)[16])
{
    if (std::all_of(std::begin(u), std::end(u), [](uint8_t b) { return b == 0; })) return {};
    static const char kHex[] = "0123456789abcdef";
    std::string s = "GPU-";
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        s += kHex[u[i] >> 4];
        s += kHex[u[i] & 15];
    }
    return s;
}

}  // namespace

std::string joinCommandLine(std::string_view argv)
{
    while (!argv.empty() && argv.back() == '\0') argv.remove_suffix(1);
    std::string s(argv);
    std::replace(s.begin(), s.end(), '\0', ' ');
    return s;
}

SymbolText splitSymbolTail(std::string_view tail)
{
    SymbolText t;
    std::string_view* parts[] = {&t.function, &t.file, &t.module, &t.callee};
    for (std::string_view* part : parts) {
        const size_t nul = tail.find('\0');
        *part = tail.substr(0, nul);
        if (nul == std::string_view::npos) break;
        tail.remove_prefix(nul + 1);
    }
    return t;
}

void applyRecord(Process& p, const wire::RecordView& v, bool keepEvents)
{
    using namespace wire;
    switch (v.type) {
    case RecordType::Process: {
        auto b = v.as<ProcessBody>();
        p.pid = b.pid;
        p.ppid = b.ppid;
        p.startNs = b.startMonotonicNs;
        p.startRealtimeNs = b.startRealtimeNs;
        p.command = joinCommandLine(v.tail<ProcessBody>());
        seen(p, b.startMonotonicNs);
        break;
    }
    case RecordType::ApiDef: {
        auto b = v.as<ApiDefBody>();
        p.apis[b.apiId] = ApiInfo{tailString(v.tail<ApiDefBody>()), b.category};
        break;
    }
    case RecordType::KernelDef:
        p.kernels[v.as<KernelDefBody>().kernelId] = tailString(v.tail<KernelDefBody>());
        break;
    case RecordType::StackDef: {
        auto b = v.as<StackDefBody>();
        auto tail = v.tail<StackDefBody>();
        // Sized by the validated tail, never by `depth`: depth * 8 wraps in 32 bits, so a huge depth
        // can pass the decoder's length check with a short tail.
        if (uint64_t(b.depth) * 8 != tail.size()) break;
        std::vector<uint64_t> pcs(tail.size() / 8);
        if (!tail.empty()) std::memcpy(pcs.data(), tail.data(), tail.size());  // an empty vector's data() may be null
        p.stacks[b.stackId] = std::move(pcs);
        break;
    }
    case RecordType::ModuleDef: {
        auto b = v.as<ModuleDefBody>();
        p.modules.push_back(ModuleInfo{b.start, b.end, b.bias, tailString(v.tail<ModuleDefBody>())});
        break;
    }
    case RecordType::PyCodeDef: {
        auto b = v.as<PyCodeDefBody>();
        const SymbolText text = splitSymbolTail(v.tail<PyCodeDefBody>());
        p.pyCodes[b.codeId] = PyCode{std::string(text.function), std::string(text.file), b.firstLine};
        break;
    }
    case RecordType::PyFrameDef: {
        auto b = v.as<PyFrameDefBody>();
        p.pyFrames[b.frameId] = PyFrame{b.codeId, b.line};
        break;
    }
    case RecordType::ThreadDef:
        p.threads[v.as<ThreadDefBody>().tid] = tailString(v.tail<ThreadDefBody>());
        break;
    case RecordType::DeviceDef:
        p.devices[v.as<DeviceDefBody>().device] = tailString(v.tail<DeviceDefBody>());
        break;
    case RecordType::DeviceInfo: {
        auto b = v.as<DeviceInfoBody>();
        Process::DeviceIds& ids = p.deviceIds[b.device];
        ids.uuid = uuidText(b.uuid);
        ids.pciBusId = std::string(b.pciBusId, strnlen(b.pciBusId, sizeof b.pciBusId));
        break;
    }
    case RecordType::Identity: {
        auto b = v.as<IdentityBody>();
        ProcessIdentity& id = p.identity;
        id.rank = b.rank;
        id.localRank = b.localRank;
        id.worldSize = b.worldSize;
        id.localWorldSize = b.localWorldSize;
        id.launcher = launcherName(b.launcher);
        id.host = tailString(v.tail<IdentityBody>());
        (b.edge == IdentityEdge::End ? id.end : id.start) = ClockPair{b.realtimeNs, b.monotonicNs, b.errorNs};
        break;
    }
    case RecordType::StringDef:
        p.strings[v.as<StringDefBody>().stringId] = tailString(v.tail<StringDefBody>());
        break;
    case RecordType::Call: {
        // Only the end time: a Call is 96 bytes, and a streaming reader reads millions.
        uint64_t endNs;
        std::memcpy(&endNs, v.body + offsetof(CallBody, endNs), sizeof endNs);
        seen(p, endNs);
        if (keepEvents) p.calls.push_back(v.as<CallBody>());
        break;
    }
    case RecordType::GpuSpan: {
        auto b = v.as<GpuSpanBody>();
        seen(p, b.endNs);
        if (keepEvents) p.spans.push_back(b);
        break;
    }
    case RecordType::Nvtx: {
        auto b = v.as<NvtxBody>();
        seen(p, b.timeNs);
        if (keepEvents) p.nvtx.push_back(b);
        break;
    }
    case RecordType::Collective: {
        auto b = v.as<CollectiveBody>();
        seen(p, b.startNs);
        if (p.collectives.size() < kMaxCollectives)
            p.collectives.push_back(b);
        else
            ++p.collectivesDropped;
        break;
    }
    case RecordType::Window: {
        auto b = v.as<WindowBody>();
        seen(p, b.timeNs);
        p.windows.push_back(b);
        break;
    }
    case RecordType::ThreadStats:
        p.threadStats.push_back(v.as<ThreadStatsBody>());
        break;
    case RecordType::Tally:
        p.tally = v.as<TallyBody>();
        break;
    case RecordType::CpuWait:
        p.cpuWait = v.as<CpuWaitBody>();
        p.cpuWaitKnown = true;
        break;
    case RecordType::GpuBudget:
        p.gpuBudgets.push_back(v.as<GpuBudgetBody>());
        break;
    case RecordType::Clock:
        p.clocks.push_back(v.as<ClockBody>());
        break;
    case RecordType::End: {
        p.end = v.as<EndBody>();
        p.ended = true;
        seen(p, p.end.endNs);
        break;
    }
    case RecordType::Notice:
        p.notices.push_back(tailString(v.tail<NoticeBody>()));
        break;
    case RecordType::Symbol: {
        auto b = v.as<SymbolBody>();
        auto tail = v.tail<SymbolBody>();
        const SymbolText text = splitSymbolTail(tail);
        Frame f;
        f.address = b.address;
        f.function = std::string(text.function);
        f.file = std::string(text.file);
        f.line = b.line;
        f.inlined = b.inlineDepth != 0;
        f.callee = std::string(text.callee);
        if (b.moduleIndex < p.modules.size()) {
            const ModuleInfo& m = p.modules[b.moduleIndex];
            f.module = m.path;
            f.offset = b.address - m.bias;
        } else {
            f.module = std::string(text.module);  // a module the process did not announce (see collector/ingest/capture_file.cpp)
        }
        p.symbols[b.address].push_back(std::move(f));
        break;
    }
    }
}

bool StreamIngest::feed(const void* data, size_t n)
{
    if (failed()) return false;
    m_received += n;
    auto in = static_cast<const uint8_t*>(data);
    if (m_keepRaw) m_raw.insert(m_raw.end(), in, in + n);
    const bool ok = m_decoder.feed(data, n, [this](const wire::RecordView& v) { onRecord(v); });
    applyHeader();
    if (!ok) {
        m_process.streamError = m_decoder.errorMessage();
        dropUnvalidated();
    }
    return ok;
}

bool StreamIngest::finish()
{
    if (failed()) return false;
    if (!m_decoder.finish()) {
        m_process.streamError = m_decoder.errorMessage();
        dropUnvalidated();
        return false;
    }
    return true;
}

void StreamIngest::fail(const std::string& message)
{
    if (failed()) return;
    m_process.streamError = message.empty() ? std::string("stream damaged") : message;
    dropUnvalidated();
}

uint32_t StreamIngest::resume()
{
    m_decoder = wire::StreamDecoder();
    m_resumed = true;
    if (m_keepRaw) m_raw.clear();
    return uint32_t(m_process.modules.size());
}

void StreamIngest::dropUnvalidated()
{
    if (!m_keepRaw) return;
    m_raw.resize(pendingValidated());
    m_raw.shrink_to_fit();
}

void StreamIngest::applyHeader()
{
    // The stream header names the process until (and unless) a Process record says more.
    if (m_headerApplied || !m_decoder.hasHeader()) return;
    m_headerApplied = true;
    const auto& h = m_decoder.header();
    if (m_process.pid == 0) m_process.pid = h.pid;
    if (m_process.startNs == 0 && h.startMonotonicNs) m_process.startNs = h.startMonotonicNs + uint64_t(m_shiftNs);
    if (m_process.startRealtimeNs == 0) m_process.startRealtimeNs = h.startRealtimeNs;
}

void StreamIngest::onRecord(const wire::RecordView& in)
{
    applyHeader();
    wire::RecordView v = in;
    if (m_shiftNs != 0) {
        m_shifted.assign(in.body, in.body + in.size);
        wire::shiftRecordTimes(in.type, m_shifted.data(), in.size, m_shiftNs);
        v.body = m_shifted.data();
    }
    if (v.type == wire::RecordType::Call) {
        ++m_calls;
        if (m_budget) {
            ++m_process.callsSeen;
            const wire::CallBody& c = v.as<wire::CallBody>();
            ++m_process.callsByStack[c.stackId];
            m_process.nsByStack[c.stackId] += c.endNs > c.beginNs ? c.endNs - c.beginNs : 0;
        }
    }
    if (m_windowCap && v.type == wire::RecordType::Call && m_process.calls.size() >= m_windowCap) trimWindow();
    if (m_keepEvents && m_budget && !m_windowCap && v.type == wire::RecordType::Call) {
        if (*m_budget == 0 && m_windowPastBudget && m_process.calls.size() >= kMinWindowCalls) {
            m_windowCap = m_process.calls.size();
            m_process.windowed = true;
            trimWindow();
        } else if (*m_budget == 0) {
            m_keepEvents = false;
            m_process.eventsDropped = true;
            std::vector<wire::CallBody>().swap(m_process.calls);
            std::vector<wire::GpuSpanBody>().swap(m_process.spans);
            std::vector<wire::NvtxBody>().swap(m_process.nvtx);
        } else {
            --*m_budget;
        }
    }
    applyRecord(m_process, v, m_keepEvents);
    if (m_observer) m_observer(m_process, v);
}

void StreamIngest::trimWindow()
{
    // The older half of the window goes, with the spans of its calls and the NVTX records before the
    // first call left: amortised O(1) a call, and never more held than the window's size.
    std::vector<wire::CallBody>& calls = m_process.calls;
    calls.erase(calls.begin(), calls.begin() + std::ptrdiff_t(calls.size() - m_windowCap / 2));
    if (calls.empty()) return;
    uint64_t firstSeq = UINT64_MAX, firstNs = UINT64_MAX;
    for (const wire::CallBody& c : calls) {
        firstSeq = std::min(firstSeq, c.seq);
        firstNs = std::min(firstNs, c.beginNs);
    }
    std::vector<wire::GpuSpanBody>& spans = m_process.spans;
    spans.erase(std::remove_if(spans.begin(), spans.end(), [&](const wire::GpuSpanBody& s) { return s.seq < firstSeq; }),
                spans.end());
    std::vector<wire::NvtxBody>& nvtx = m_process.nvtx;
    nvtx.erase(std::remove_if(nvtx.begin(), nvtx.end(), [&](const wire::NvtxBody& n) { return n.timeNs < firstNs; }),
               nvtx.end());
}

size_t StreamIngest::pendingValidated() const
{
    return m_keepRaw ? size_t(m_decoder.offset() - m_rawBase) : 0;
}

void StreamIngest::takeValidated(std::vector<uint8_t>& out)
{
    const size_t n = pendingValidated();
    out.insert(out.end(), m_raw.begin(), m_raw.begin() + n);
    m_raw.erase(m_raw.begin(), m_raw.begin() + n);
    m_rawBase += n;
    // What is left is at most a record still arriving. A stream that sent a burst keeps no
    // burst-sized buffer: with many connections open, idle capacities would add up to far more than
    // the bytes pending.
    if (m_raw.capacity() > kKeptCapacity && m_raw.size() * 4 < m_raw.capacity()) m_raw.shrink_to_fit();
}

Process ingestStream(const void* data, size_t n)
{
    StreamIngest in;
    in.feed(data, n);
    in.finish();
    return std::move(in.process());
}

}  // namespace gpuspy::collect
