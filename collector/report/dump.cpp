// collector/report/dump.cpp: the line format of `gpuspy dump`, one record per line, every field that matters.
#include "collector/report/dump.h"

#include "collector/ingest/ingest.h"

#include <fmt/format.h>

#include <cstring>
#include <iterator>

namespace gpuspy::collect {

using namespace wire;

std::string escapeText(std::string_view s)
{
    std::string out;
    out.reserve(s.size() + 2);
    out.push_back('"');
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(char(c));
        } else if (c < 0x20 || c >= 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out.push_back(char(c));
        }
    }
    out.push_back('"');
    return out;
}

std::string callFlagNames(uint16_t flags)
{
    static const char* const names[] = {"async", "ptds", "gpu-timed", "sampled-out", "capturing", "implicit-sync",
                                        "device-work", "held-up"};
    std::string s;
    for (unsigned i = 0; i < 16; ++i) {
        if (!(flags & (1u << i))) continue;
        if (!s.empty()) s.push_back('|');
        s += i < std::size(names) ? names[i] : fmt::format("bit{}", i);
    }
    return s.empty() ? "-" : s;
}

namespace {

std::string apiName(const Process& p, uint16_t id)
{
    auto it = p.apis.find(id);
    return it == p.apis.end() ? fmt::format("api#{}", id) : it->second.name;
}

std::string kernelName(const Process& p, uint32_t id)
{
    if (id == 0) return "?";
    auto it = p.kernels.find(id);
    return it == p.kernels.end() ? fmt::format("kernel#{}", id) : escapeText(it->second);
}

std::string stringName(const Process& p, uint32_t id)
{
    if (id == 0) return "-";
    auto it = p.strings.find(id);
    return it == p.strings.end() ? fmt::format("string#{}", id) : escapeText(it->second);
}

const char* nvtxKindName(NvtxKind k)
{
    switch (k) {
    case NvtxKind::Push: return "push";
    case NvtxKind::Pop: return "pop";
    case NvtxKind::Start: return "start";
    case NvtxKind::End: return "end";
    case NvtxKind::Mark: return "mark";
    }
    return "?";
}

std::string formatCall(const Process& p, const CallBody& c)
{
    std::string s = fmt::format("#{} {} {} tid={} t={}..{} dur={}ns stream={:#x} dev={} result={} flags={} stack={}",
                                c.seq, apiName(p, c.apiId), categoryName(c.category), c.tid, c.beginNs, c.endNs,
                                int64_t(c.endNs - c.beginNs), c.stream, c.device, c.result, callFlagNames(c.flags),
                                c.stackId);
    switch (c.category) {
    case Category::Transfer: {
        const TransferArgs& t = c.args.transfer;
        s += fmt::format(" {} bytes={} {}->{} dst={:#x} src={:#x}", directionName(t.direction), t.bytes,
                         memKindName(t.srcMem), memKindName(t.dstMem), t.dst, t.src);
        if (t.direction == Direction::PtoP) s += fmt::format(" peer={}", t.peerDevice);
        break;
    }
    case Category::Launch: {
        const LaunchArgs& l = c.args.launch;
        s += fmt::format(" kernel={} grid={}x{}x{} block={}x{}x{} smem={}", kernelName(p, l.kernelId), l.grid[0],
                         l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.sharedMem);
        break;
    }
    case Category::Alloc: {
        const AllocArgs& a = c.args.alloc;
        s += fmt::format(" ptr={:#x} bytes={} mem={}", a.ptr, a.bytes, memKindName(a.mem));
        break;
    }
    case Category::Sync:
        s += fmt::format(" object={:#x}", c.args.sync.object);
        break;
    default:
        break;
    }
    return s;
}

}  // namespace

std::string formatRecord(const Process& p, const RecordView& v)
{
    std::string head = fmt::format("pid {} @{} {}", p.pid, v.offset, recordName(v.type));
    std::string rest;
    switch (v.type) {
    case RecordType::Process: {
        auto b = v.as<ProcessBody>();
        rest = fmt::format("pid={} ppid={} start={} realtime={} command={}", b.pid, b.ppid, b.startMonotonicNs,
                           b.startRealtimeNs, escapeText(joinCommandLine(v.tail<ProcessBody>())));
        break;
    }
    case RecordType::ApiDef: {
        auto b = v.as<ApiDefBody>();
        rest = fmt::format("id={} {} category={}", b.apiId, escapeText(v.tail<ApiDefBody>()), categoryName(b.category));
        break;
    }
    case RecordType::KernelDef:
        rest = fmt::format("id={} {}", v.as<KernelDefBody>().kernelId, escapeText(v.tail<KernelDefBody>()));
        break;
    case RecordType::StackDef: {
        auto b = v.as<StackDefBody>();
        rest = fmt::format("id={} depth={}", b.stackId, b.depth);
        auto tail = v.tail<StackDefBody>();
        for (size_t i = 0; i + 8 <= tail.size(); i += 8) {
            uint64_t pc;
            std::memcpy(&pc, tail.data() + i, 8);
            rest += fmt::format(" {:#x}", pc);
        }
        break;
    }
    case RecordType::ModuleDef: {
        auto b = v.as<ModuleDefBody>();
        rest = fmt::format("{:#x}-{:#x} bias={:#x} {}", b.start, b.end, b.bias, escapeText(v.tail<ModuleDefBody>()));
        break;
    }
    case RecordType::PyCodeDef: {
        auto b = v.as<PyCodeDefBody>();
        rest = fmt::format("code={} first_line={} {}", b.codeId, b.firstLine, escapeText(v.tail<PyCodeDefBody>()));
        break;
    }
    case RecordType::PyFrameDef: {
        auto b = v.as<PyFrameDefBody>();
        rest = fmt::format("frame={} code={} line={} lasti={}", b.frameId, b.codeId, b.line, b.lasti);
        break;
    }
    case RecordType::ThreadDef:
        rest = fmt::format("tid={} {}", v.as<ThreadDefBody>().tid, escapeText(v.tail<ThreadDefBody>()));
        break;
    case RecordType::DeviceDef:
        rest = fmt::format("device={} {}", v.as<DeviceDefBody>().device, escapeText(v.tail<DeviceDefBody>()));
        break;
    case RecordType::DeviceInfo: {
        auto b = v.as<DeviceInfoBody>();
        std::string uuid;
        for (uint8_t x : b.uuid) uuid += fmt::format("{:02x}", x);
        rest = fmt::format("device={} uuid={} pci={}", b.device, uuid,
                           escapeText(std::string_view(b.pciBusId, strnlen(b.pciBusId, sizeof b.pciBusId))));
        break;
    }
    case RecordType::Identity: {
        auto b = v.as<IdentityBody>();
        rest = fmt::format("{} rank={} local_rank={} world={} local_world={} launcher={} host={} realtime={} mono={} error={}",
                           b.edge == IdentityEdge::End ? "end" : "start", b.rank, b.localRank, b.worldSize,
                           b.localWorldSize, launcherName(b.launcher), escapeText(v.tail<IdentityBody>()), b.realtimeNs,
                           b.monotonicNs, b.errorNs);
        break;
    }
    case RecordType::StringDef:
        rest = fmt::format("id={} {}", v.as<StringDefBody>().stringId, escapeText(v.tail<StringDefBody>()));
        break;
    case RecordType::Call:
        rest = formatCall(p, v.as<CallBody>());
        break;
    case RecordType::GpuSpan: {
        auto b = v.as<GpuSpanBody>();
        rest = fmt::format("#{} dev={} t={}..{} dur={}ns", b.seq, b.device, b.beginNs, b.endNs,
                           int64_t(b.endNs - b.beginNs));
        break;
    }
    case RecordType::Nvtx: {
        auto b = v.as<NvtxBody>();
        rest = fmt::format("{} tid={} t={} range={} message={} domain={}", nvtxKindName(b.kind), b.tid, b.timeNs,
                           b.rangeId, stringName(p, b.messageId), stringName(p, b.domainId));
        break;
    }
    case RecordType::ThreadStats: {
        auto b = v.as<ThreadStatsBody>();
        rest = fmt::format("tid={} calls={} dropped={} overhead={}ns", b.tid, b.calls, b.dropped, b.overheadNs);
        break;
    }
    case RecordType::GpuBudget: {
        auto b = v.as<GpuBudgetBody>();
        rest = fmt::format("tid={} budget={}ppm first={} last={} record={}ns bookkeeping={}ns choosing={}ns "
                           "drain={}ns timed={} untimed={} set-aside-late-end={} set-aside-held-up={}",
                           b.tid, b.budgetPpm, b.firstNs, b.lastNs, b.recordNs, b.bookkeepingNs, b.choosingNs,
                           b.drainNs, b.timedOps, b.untimedOps, b.lateEndSpans, b.heldUpSpans);
        break;
    }
    case RecordType::Clock: {
        auto b = v.as<ClockBody>();
        rest = fmt::format("dev={} offset={}ns error={}ns", b.device, b.offsetNs, b.errorNs);
        break;
    }
    case RecordType::End: {
        auto b = v.as<EndBody>();
        rest = fmt::format("t={} made={} dropped={} sampled-out={} reason={}", b.endNs, b.recordsMade, b.recordsDropped,
                           b.gpuSpansSampledOut, b.exitReason);
        break;
    }
    case RecordType::Window: {
        auto b = v.as<WindowBody>();
        uint64_t left = 0;
        for (uint64_t n : b.leftOut) left += n;
        rest = fmt::format("t={} index={} edge={} trigger={} tid={} left-out={}", b.timeNs, b.index, int(b.edge),
                           int(b.trigger), b.tid, left);
        break;
    }
    case RecordType::CpuWait: {
        auto b = v.as<CpuWaitBody>();
        rest = fmt::format("run-delay={}ns tasks={}", b.runDelayNs, b.tasks);
        break;
    }
    case RecordType::Tally: {
        auto b = v.as<TallyBody>();
        uint64_t left = 0;
        for (uint64_t n : b.leftOut) left += n;
        rest = fmt::format("t={} calls={} dropped={} overhead={}ns window={} left-out={}", b.timeNs, b.calls, b.dropped,
                           b.overheadNs, b.window == 0xffffffffu ? std::string("none") : std::to_string(b.window), left);
        break;
    }
    case RecordType::Collective: {
        auto b = v.as<CollectiveBody>();
        auto str = [&](uint32_t id) {
            auto it = p.strings.find(id);
            return id && it != p.strings.end() ? escapeText(it->second) : std::string("-");
        };
        rest = fmt::format("t={} api={} launch={} tid={} comm={:#x} rank={}/{} nodes={} {} {} seq={} count={} {} peer={} "
                           "algo={} proto={} channels={} stream={:#x} stack={}",
                           b.startNs, b.apiNs, b.launchNs, b.tid, b.commId, b.rank, b.nranks, b.nNodes,
                           b.kind == CollectiveKind::Collective ? "coll" : "p2p", str(b.funcId),
                           b.seq == ~0ull ? std::string("-") : std::to_string(b.seq), b.count, str(b.datatypeId), b.peer,
                           str(b.algoId), str(b.protoId), b.nChannels, b.stream, b.stackId);
        break;
    }
    case RecordType::Notice:
        rest = fmt::format("code={} {}", v.as<NoticeBody>().code, escapeText(v.tail<NoticeBody>()));
        break;
    case RecordType::Symbol: {
        auto b = v.as<SymbolBody>();
        auto tail = v.tail<SymbolBody>();
        const SymbolText t = splitSymbolTail(tail);
        rest = fmt::format("{:#x} inline={} {} {}:{} module={}", b.address, b.inlineDepth, escapeText(t.function),
                           escapeText(t.file), b.line,
                           b.moduleIndex < p.modules.size() ? escapeText(p.modules[b.moduleIndex].path)
                                                           : escapeText(t.module));
        break;
    }
    }
    return rest.empty() ? head : head + " " + rest;
}

}  // namespace gpuspy::collect
