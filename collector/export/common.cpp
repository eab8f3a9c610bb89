// collector/export/common.cpp: the capture arranged by track for the exports: threads and streams,
// GPU spans joined to their calls, NVTX ranges paired, stacks as frames, JSON escaping.
#include "collector/export/common.h"

#include "collector/analyze/internal.h"
#include "collector/model/api_names.h"
#include "collector/model/library_code.h"
#include "collector/timeline/device_timeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <set>
#include <tuple>

namespace gpuspy::collect::exporting {

namespace {

std::string baseName(const std::string& path)
{
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hex(uint64_t v)
{
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

// Frames that are not the user's code: the one rule of collector/model/library_code.h (the report's call
// sites ask it too).
bool isLibraryFrame(const OutFrame& f) { return collect::isLibraryFrame(f.module, f.function, f.file); }

WorkKind workKindOf(const wire::CallBody& c)
{
    switch (c.category) {
    case wire::Category::Launch: return WorkKind::Kernel;
    case wire::Category::Graph: return WorkKind::Graph;
    case wire::Category::Transfer: return c.args.transfer.direction == wire::Direction::Memset ? WorkKind::Memset : WorkKind::Copy;
    default: return WorkKind::Other;
    }
}

std::string processLabel(const Process& p)
{
    std::string cmd = p.command;
    const size_t space = cmd.find(' ');
    if (space != std::string::npos) cmd.resize(space);
    cmd = baseName(cmd);
    // Read with other captures as one run (Process::captureName): its host too, where recorded.
    const std::string host = !p.captureName.empty() && !p.identity.host.empty() ? ", host " + p.identity.host : "";
    return (cmd.empty() ? std::string("process") : cmd) + " (pid " + std::to_string(p.pid) + host + ")";
}

// The untimed operations' placements, with their streams (detail::placeProcess, as the analysis places them).
template <typename Out>
void placeUntimed(const Process& p, const std::vector<const wire::CallBody*>& calls, Out out)
{
    detail::placeProcess(p, calls, [&](const Placement& pl, const StreamId& id) {
        if (pl.estimated) out(pl, id);
    });
}

}  // namespace

const char* workKindName(WorkKind k)
{
    switch (k) {
    case WorkKind::Kernel: return "kernel";
    case WorkKind::Copy: return "copy";
    case WorkKind::Memset: return "memset";
    case WorkKind::Graph: return "graph";
    case WorkKind::Other: break;
    }
    return "other";
}

std::string apiAbiName(const Process& p, const wire::CallBody& c)
{
    auto it = p.apis.find(c.apiId);
    return it != p.apis.end() ? it->second.name : "api#" + std::to_string(c.apiId);
}

std::string apiLabel(const Process& p, const wire::CallBody& c)
{
    const std::string abi = apiAbiName(p, c);
    const std::string_view rt = runtimeNameOf(abi);
    // "cudaLaunchKernel / <<<>>>": the first name is enough on a slice.
    if (!rt.empty()) return std::string(rt.substr(0, rt.find(' ')));
    return std::string(driverBaseName(abi));
}

std::string kernelLabel(const Process& p, const wire::CallBody& c)
{
    if (c.category != wire::Category::Launch) return "";
    auto it = p.kernels.find(c.args.launch.kernelId);
    if (it == p.kernels.end()) return c.args.launch.kernelId ? "[kernel #" + std::to_string(c.args.launch.kernelId) + "]" : "[unknown kernel]";
    return detail::demangle(it->second);
}

bool isBlocking(const Process& p, const wire::CallBody& c)
{
    detail::ProcView pv;
    pv.proc = &p;
    return detail::isExplicitSync(apiAbiName(p, c)) || detail::isImplicitSync(pv, c);
}

namespace {

// A program whose stacks never pass through cudart (no libcudart mapped, no static runtime frame on any
// stack) calls the driver API itself: its calls are named as the driver's. No stacks: unknown, the
// runtime's names as before.
bool callsDriverDirectly(const Process& p)
{
    if (p.stacks.empty()) return false;
    for (const ModuleInfo& m : p.modules) {
        const size_t slash = m.path.rfind('/');
        if (m.path.compare(slash == std::string::npos ? 0 : slash + 1, 9, "libcudart") == 0) return false;
    }
    for (const auto& [addr, frames] : p.symbols)
        for (const Frame& f : frames)
            if (isStaticRuntimeInternal(f.function)) return false;
    return true;
}

}  // namespace

ProcNames::ProcNames(const Process& p)
    : m_proc(p), m_view(std::make_unique<detail::ProcView>()), m_driverNames(callsDriverDirectly(p))
{
    m_view->proc = &p;
}
ProcNames::~ProcNames() = default;

const ProcNames::Api& ProcNames::api(const wire::CallBody& c)
{
    auto it = m_apis.find(c.apiId);
    if (it != m_apis.end()) return it->second;
    Api a;
    a.abi = apiAbiName(m_proc, c);
    a.label = m_driverNames ? std::string(driverBaseName(a.abi)) : apiLabel(m_proc, c);
    a.explicitWait = detail::isExplicitSync(a.abi);
    return m_apis.emplace(c.apiId, std::move(a)).first->second;
}

const std::string& ProcNames::abi(const wire::CallBody& c) { return api(c).abi; }
const std::string& ProcNames::label(const wire::CallBody& c) { return api(c).label; }

const std::string& ProcNames::kernel(const wire::CallBody& c)
{
    if (c.category != wire::Category::Launch) return m_empty;
    auto it = m_kernels.find(c.args.launch.kernelId);
    if (it == m_kernels.end()) it = m_kernels.emplace(c.args.launch.kernelId, kernelLabel(m_proc, c)).first;
    return it->second;
}

bool ProcNames::blocking(const wire::CallBody& c) { return api(c).explicitWait || detail::isImplicitSync(*m_view, c); }

std::vector<OutFrame> stackFrames(const Process& p, uint32_t stackId)
{
    std::vector<OutFrame> out;
    auto st = p.stacks.find(stackId);
    if (stackId == 0 || st == p.stacks.end()) return out;
    for (uint64_t addr : st->second) {
        auto sym = p.symbols.find(addr);
        if (sym != p.symbols.end() && !sym->second.empty()) {
            for (const Frame& fr : sym->second) {
                OutFrame f{fr.function, fr.file, fr.line, fr.module, fr.inlined, true, wire::isPyFrame(addr)};
                if (f.function.empty()) f.function = (fr.module.empty() ? hex(addr) : baseName(fr.module) + "+" + hex(fr.offset));
                out.push_back(std::move(f));
            }
            continue;
        }
        OutFrame f;
        f.function = hex(addr);
        for (const ModuleInfo& m : p.modules)
            if (addr >= m.start && addr < m.end) {
                f.module = m.path;
                f.function = baseName(m.path) + "+" + hex(addr - m.bias);
                break;
            }
        out.push_back(std::move(f));
    }
    const bool python = std::any_of(out.begin(), out.end(), [](const OutFrame& f) { return f.python; });
    for (OutFrame& f : out) f.app = python ? f.python : !isLibraryFrame(f);
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<uint32_t> mergedRunOfProcesses(const Capture& capture)
{
    std::vector<uint32_t> runs(capture.processes.size(), 0);
    if (capture.runs.size() < 2) return runs;
    for (const RunInfo& r : capture.runs)
        for (size_t i : r.processes)
            if (i < runs.size()) runs[i] = r.run + 1;
    return runs;
}

std::vector<uint64_t> tracePids(const Capture& capture)
{
    std::vector<uint64_t> out(capture.processes.size());
    std::map<uint32_t, std::vector<const std::string*>> capturesOfPid;  // pid -> the captures holding it, in order
    for (size_t pi = 0; pi < capture.processes.size(); ++pi) {
        const Process& p = capture.processes[pi];
        std::vector<const std::string*>& seen = capturesOfPid[p.pid];
        size_t k = 0;
        while (k < seen.size() && *seen[k] != p.captureName) ++k;
        if (k == seen.size()) seen.push_back(&p.captureName);
        out[pi] = uint64_t(p.pid) + (uint64_t(k) << 22);
    }
    return out;
}

std::vector<std::string> jobMemberFrames(const Capture& capture)
{
    std::vector<std::string> out(capture.processes.size());
    for (size_t pi = 0; pi < capture.processes.size(); ++pi) {
        const Process& p = capture.processes[pi];
        if (p.captureName.empty()) continue;
        if (p.identity.rank >= 0) out[pi] = "rank " + std::to_string(p.identity.rank);
        else out[pi] = (p.identity.host.empty() ? std::string() : p.identity.host + " ") + "pid " + std::to_string(p.pid);
    }
    return out;
}

Index buildIndex(const Capture& capture)
{
    Index ix;
    const std::vector<uint32_t> runOf = mergedRunOfProcesses(capture);
    bool any = false;
    auto seen = [&](uint64_t t) {
        if (!t) return;
        ix.firstNs = any ? std::min(ix.firstNs, t) : t;
        ix.lastNs = std::max(ix.lastNs, t);
        any = true;
    };
    for (size_t pi = 0; pi < capture.processes.size(); ++pi) {
        const Process& p = capture.processes[pi];
        ProcIndex px;
        px.proc = &p;
        px.label = processLabel(p);
        if (runOf[pi]) px.label.insert(px.label.size() - 1, ", run " + std::to_string(runOf[pi]));
        for (const wire::CallBody& c : p.calls) px.calls.push_back(&c);
        std::stable_sort(px.calls.begin(), px.calls.end(), [](auto* a, auto* b) { return a->beginNs < b->beginNs; });

        // Threads: every tid that made a call, pushed a range or was named, in tid order.
        std::set<uint32_t> tids;
        for (const wire::CallBody* c : px.calls) tids.insert(c->tid);
        for (const wire::NvtxBody& n : p.nvtx) tids.insert(n.tid);
        std::map<uint32_t, size_t> threadTrack;
        for (uint32_t tid : tids) {
            Track t;
            t.process = pi;
            t.tid = tid;
            auto name = p.threads.find(tid);
            const std::string tname = name != p.threads.end() && !name->second.empty() ? name->second : "thread";
            t.name = tname + " (tid " + std::to_string(tid) + ")";
            threadTrack[tid] = ix.tracks.size();
            ix.tracks.push_back(std::move(t));
        }

        // Streams: from the GPU work of the calls, measured and estimated, keyed by device, handle and
        // (per-thread) tid as the device timeline names them (streamIdOf: CU_STREAM_LEGACY is the
        // default stream, CU_STREAM_PER_THREAD the thread's own).
        std::unordered_map<uint64_t, const wire::CallBody*> bySeq;
        for (const wire::CallBody* c : px.calls) bySeq.emplace(c->seq, c);
        using StreamKey = std::tuple<int, uint64_t, bool, uint32_t>;
        auto keyOf = [](const StreamId& id) { return StreamKey{id.device, id.handle, id.perThread, id.tid}; };
        std::map<StreamKey, std::vector<std::pair<const wire::GpuSpanBody*, bool>>> streams;  // (body, estimated)
        for (const wire::GpuSpanBody& s : p.spans) {
            auto it = bySeq.find(s.seq);
            // A span of a call without device work is a drain mark (shim/gpu_time.cpp gpuMarkDrain: when
            // a stream synchronize's stream drained): the timeline reads it, the GPU rows do not show it.
            if (it != bySeq.end() && !(it->second->flags & wire::kCallDeviceWork)) continue;
            StreamKey key{s.device, 0, false, 0};
            if (it != bySeq.end()) {
                StreamId id = streamIdOf(*it->second);
                id.device = s.device;
                key = keyOf(id);
            }
            streams[key].emplace_back(&s, false);
        }
        placeUntimed(p, px.calls, [&](const Placement& pl, const StreamId& id) {
            ix.estimatedBodies.push_back(wire::GpuSpanBody{pl.seq, pl.begin[kEst], std::max(pl.begin[kEst], pl.end[kEst]), pl.device, 0});
            streams[keyOf(id)].emplace_back(&ix.estimatedBodies.back(), true);
        });
        std::unordered_map<uint64_t, size_t> callIndexOfSeq;
        for (size_t i = 0; i < px.calls.size(); ++i) callIndexOfSeq.emplace(px.calls[i]->seq, i);
        for (const auto& [key, spans] : streams) {
            Track t;
            t.kind = TrackKind::Stream;
            t.process = pi;
            std::tie(t.device, t.stream, t.perThread, t.tid) = key;
            const std::string gpu = "GPU " + std::to_string(t.device);
            if (t.perThread) t.name = gpu + " \u00b7 per-thread stream of tid " + std::to_string(t.tid);
            else if (t.stream == 0) t.name = gpu + " \u00b7 default stream";
            else t.name = gpu + " \u00b7 stream " + hex(t.stream);
            const size_t track = ix.tracks.size();
            ix.tracks.push_back(std::move(t));
            for (const auto& [s, estimated] : spans) {
                Span sp;
                sp.body = s;
                sp.track = track;
                sp.estimated = estimated;
                if (auto c = bySeq.find(s->seq); c != bySeq.end()) {
                    sp.call = c->second;
                    sp.callIndex = callIndexOfSeq[s->seq];
                    sp.kind = workKindOf(*c->second);
                }
                ix.spans.push_back(sp);
            }
        }
        px.callTrack.reserve(px.calls.size());
        for (const wire::CallBody* c : px.calls) {
            px.callTrack.push_back(threadTrack[c->tid]);
            seen(c->beginNs);
            seen(c->endNs);
        }
        for (const auto& [key, spans] : streams)
            for (const auto& [s, estimated] : spans) {
                seen(s->beginNs);
                seen(s->endNs);
            }

        // NVTX: push/pop pairs per (domain, thread); start/end pairs by range id; marks alone.
        std::vector<const wire::NvtxBody*> events;
        for (const wire::NvtxBody& n : p.nvtx) events.push_back(&n);
        std::stable_sort(events.begin(), events.end(), [](auto* a, auto* b) { return a->timeNs < b->timeNs; });
        std::map<std::pair<uint32_t, uint32_t>, std::vector<NvtxRange>> pushed;
        std::map<uint32_t, uint32_t> depthOfThread;
        std::map<uint64_t, NvtxRange> started;
        std::vector<NvtxRange> ranges;
        for (const wire::NvtxBody* n : events) {
            seen(n->timeNs);
            const size_t track = threadTrack[n->tid];
            switch (n->kind) {
            case wire::NvtxKind::Push: {
                NvtxRange r{track, n->timeNs, 0, p.nvtxName(*n), true, false, depthOfThread[n->tid]++};
                pushed[{n->domainId, n->tid}].push_back(std::move(r));
                break;
            }
            case wire::NvtxKind::Pop: {
                auto& st = pushed[{n->domainId, n->tid}];
                if (st.empty()) break;  // its push predates the shim
                st.back().end = n->timeNs;
                ranges.push_back(std::move(st.back()));
                st.pop_back();
                --depthOfThread[n->tid];
                break;
            }
            case wire::NvtxKind::Start: started[n->rangeId] = NvtxRange{track, n->timeNs, 0, p.nvtxName(*n), false, false, 0}; break;
            case wire::NvtxKind::End: {
                auto it = started.find(n->rangeId);
                if (it == started.end()) break;
                it->second.end = n->timeNs;
                ranges.push_back(std::move(it->second));
                started.erase(it);
                break;
            }
            case wire::NvtxKind::Mark: ranges.push_back(NvtxRange{track, n->timeNs, n->timeNs, p.nvtxName(*n), false, true, 0}); break;
            }
        }
        // Ranges still open at the end of the capture end there.
        const uint64_t endOfProcess = std::max(p.lastNs, p.ended ? p.end.endNs : 0);
        for (auto& [key, st] : pushed)
            for (NvtxRange& r : st) {
                r.end = std::max(r.begin, endOfProcess);
                ranges.push_back(std::move(r));
            }
        for (auto& [id, r] : started) {
            r.end = std::max(r.begin, endOfProcess);
            ranges.push_back(std::move(r));
        }
        // Start/end ranges and marks take the first lane below the thread's push/pop ranges that is
        // free at their start: they may overlap anything.
        std::map<size_t, uint32_t> pushLanes;
        for (const NvtxRange& r : ranges)
            if (r.pushPop) pushLanes[r.track] = std::max(pushLanes[r.track], r.depth + 1);
        std::stable_sort(ranges.begin(), ranges.end(), [](const NvtxRange& a, const NvtxRange& b) { return a.begin < b.begin; });
        std::map<size_t, std::vector<uint64_t>> laneEnds;  // per track: end of the last range in each extra lane
        for (NvtxRange& r : ranges) {
            if (r.pushPop) continue;
            auto& ends = laneEnds[r.track];
            size_t lane = 0;
            while (lane < ends.size() && ends[lane] > r.begin) ++lane;
            if (lane == ends.size()) ends.push_back(0);
            ends[lane] = std::max(r.end, r.begin + 1);
            r.depth = pushLanes[r.track] + uint32_t(lane);
        }
        for (NvtxRange& r : ranges) ix.nvtx.push_back(std::move(r));
        ix.procs.push_back(std::move(px));
    }
    std::stable_sort(ix.spans.begin(), ix.spans.end(), [](const Span& a, const Span& b) { return a.body->beginNs < b.body->beginNs; });
    for (size_t i = 0; i < ix.spans.size(); ++i) {
        const Span& s = ix.spans[i];
        if (s.call) ix.procs[ix.tracks[s.track].process].spansOfSeq[s.call->seq].push_back(i);
    }
    std::stable_sort(ix.nvtx.begin(), ix.nvtx.end(), [](const NvtxRange& a, const NvtxRange& b) { return a.begin < b.begin; });
    return ix;
}

void appendJsonString(std::string& out, std::string_view s)
{
    static const char* const kHex = "0123456789abcdef";
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c == '"') out += "\\\"";
            else if (c == '\\') out += "\\\\";
            else if (c == '\n') out += "\\n";
            else if (c == '\t') out += "\\t";
            else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 15];
            } else out += char(c);
            ++i;
            continue;
        }
        // A well-formed multi-byte sequence is copied; anything else is one U+FFFD per byte.
        size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        bool ok = n != 0 && i + n <= s.size();
        for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
        if (ok && n == 3) {
            const auto c1 = static_cast<unsigned char>(s[i + 1]);
            ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
        }
        if (ok && n == 4) {
            const auto c1 = static_cast<unsigned char>(s[i + 1]);
            ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
        }
        if (!ok) {
            out += "\\ufffd";
            ++i;
            continue;
        }
        out.append(s.data() + i, n);
        i += n;
    }
    out += '"';
}

void writeOutputFile(const std::string& path, std::string_view data, bool force)
{
    auto fail = [&](const std::string& what) { throw std::runtime_error(path + ": " + what); };
    int fd = -1;
    if (path == "-") {
        fd = STDOUT_FILENO;
    } else {
        const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
        fd = ::open(path.c_str(), flags, 0644);
        if (fd < 0 && errno == EEXIST) {
            struct stat st{};
            if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) fail("is a symbolic link; not writing through it");
            if (!force) fail("already exists (use -f to overwrite it)");
            if (!S_ISREG(st.st_mode)) fail("exists and is not a regular file; not overwriting it");
            if (::unlink(path.c_str()) != 0) fail(std::string("cannot remove the old file: ") + std::strerror(errno));
            fd = ::open(path.c_str(), flags, 0644);
        }
        if (fd < 0) fail(std::string("cannot create it: ") + std::strerror(errno));
    }
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int e = errno;
            if (fd != STDOUT_FILENO) ::close(fd);
            fail(std::string("write failed: ") + std::strerror(e));
        }
        done += size_t(n);
    }
    if (fd != STDOUT_FILENO && ::close(fd) != 0) fail(std::string("write failed: ") + std::strerror(errno));
}

void makeOutputDirectory(const std::string& path)
{
    if (::mkdir(path.c_str(), 0755) == 0) return;
    const int e = errno;
    struct stat st{};
    if (e == EEXIST && ::lstat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return;
        throw std::runtime_error(path + (S_ISLNK(st.st_mode) ? ": is a symbolic link; not writing through it" : ": exists and is not a directory"));
    }
    throw std::runtime_error(path + ": cannot make the directory: " + std::strerror(e));
}

void appendMicros(std::string& out, uint64_t ns)
{
    char b[32];
    std::snprintf(b, sizeof b, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000), static_cast<unsigned long long>(ns % 1000));
    out += b;
}

}  // namespace gpuspy::collect::exporting
