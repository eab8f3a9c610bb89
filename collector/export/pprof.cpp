// collector/export/pprof.cpp: the pprof writer: profile.proto encoded by hand (a few message types, varints
// and length-delimited fields), then gzip (zlib). Field numbers as in github.com/google/pprof's
// proto/profile.proto.
#include "collector/export/pprof.h"

#include "collector/export/common.h"
#include "collector/model/library_code.h"

#include <zlib.h>

#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace gpuspy::collect {

namespace {

using namespace exporting;

// ---- protobuf, the little of it a profile needs
void varint(std::string& out, uint64_t v)
{
    while (v >= 0x80) {
        out += char(uint8_t(v) | 0x80);
        v >>= 7;
    }
    out += char(uint8_t(v));
}
void tag(std::string& out, uint32_t field, uint32_t wire) { varint(out, uint64_t(field) << 3 | wire); }
void uintField(std::string& out, uint32_t field, uint64_t v)
{
    if (!v) return;  // proto3: zero is the default, not written
    tag(out, field, 0);
    varint(out, v);
}
void bytesField(std::string& out, uint32_t field, const std::string& bytes)
{
    tag(out, field, 2);
    varint(out, bytes.size());
    out += bytes;
}
void packed(std::string& out, uint32_t field, const std::vector<uint64_t>& values)
{
    std::string body;
    for (uint64_t v : values) varint(body, v);
    bytesField(out, field, body);
}


std::string gzip(const std::string& in)
{
    z_stream z{};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("zlib: deflateInit2 failed");
    std::string out(deflateBound(&z, uLong(in.size())) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = uInt(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    const int rc = deflate(&z, Z_FINISH);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate failed");
    out.resize(z.total_out);
    return out;
}

struct Values {
    uint64_t calls = 0, hostNs = 0, blockedNs = 0, gpuNs = 0;
};

}  // namespace

std::string exportPprof(const Capture& capture)
{
    Interner str;
    str.id("");  // string_table[0] is the empty string
    auto sid = [&](const std::string& s) { return uint64_t(str.id(s)); };
    // Functions by (name, file); locations by (function, line): ids from 1.
    std::map<std::pair<std::string, std::string>, uint64_t> functions;
    std::map<std::pair<uint64_t, uint32_t>, uint64_t> locations;
    std::string functionMsgs, locationMsgs;
    auto functionId = [&](const std::string& name, const std::string& file) {
        auto [it, fresh] = functions.emplace(std::make_pair(name, file), functions.size() + 1);
        if (fresh) {
            std::string f;
            uintField(f, 1, it->second);
            uintField(f, 2, sid(name));
            uintField(f, 3, sid(name));
            uintField(f, 4, sid(file));
            bytesField(functionMsgs, 5, f);
        }
        return it->second;
    };
    auto locationId = [&](uint64_t function, uint32_t line) {
        auto [it, fresh] = locations.emplace(std::make_pair(function, line), locations.size() + 1);
        if (fresh) {
            std::string l, ln;
            uintField(ln, 1, function);
            uintField(ln, 2, line);
            uintField(l, 1, it->second);
            uintField(l, 2, 1);  // the one mapping: symbols resolved already
            bytesField(l, 4, ln);
            bytesField(locationMsgs, 4, l);
        }
        return it->second;
    };

    // Samples by (process, stack, CUDA call as named, kernel launched): their values.
    std::map<std::tuple<size_t, uint32_t, std::string, std::string>, Values> samples;
    const std::vector<uint32_t> runOf = mergedRunOfProcesses(capture);
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t pi = 0; pi < capture.processes.size(); ++pi) {
        const Process& p = capture.processes[pi];
        ProcNames names(p);
        std::unordered_map<uint64_t, uint64_t> gpuOfSeq;
        for (const wire::GpuSpanBody& s : p.spans) gpuOfSeq[s.seq] += s.endNs > s.beginNs ? s.endNs - s.beginNs : 0;
        for (const wire::CallBody& c : p.calls) {
            const uint64_t host = c.endNs > c.beginNs ? c.endNs - c.beginNs : 0;
            first = std::min(first, c.beginNs);
            last = std::max(last, c.endNs);
            const bool launch = c.category == wire::Category::Launch && c.args.launch.kernelId;
            Values& v = samples[{pi, c.stackId, names.label(c), launch ? names.kernel(c) : std::string()}];
            ++v.calls;
            v.hostNs += host;
            if (names.blocking(c)) v.blockedNs += host;
            if (auto g = gpuOfSeq.find(c.seq); g != gpuOfSeq.end()) v.gpuNs += g->second;
        }
    }

    std::string sampleMsgs;
    std::map<std::pair<size_t, uint32_t>, std::vector<uint64_t>> stackLocations;  // leaf first, the CUDA call apart
    for (const auto& [key, v] : samples) {
        const auto& [pi, stackId, call, kernel] = key;
        const Process& p = capture.processes[pi];
        auto st = stackLocations.find({pi, stackId});
        if (st == stackLocations.end()) {
            std::vector<uint64_t> ids;
            const std::vector<OutFrame> frames = stackFrames(p, stackId);  // outermost first
            for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
                if (isStaticRuntimeInternal(f->function)) continue;
                ids.push_back(locationId(functionId(f->function.empty() ? "[unknown]" : f->function, f->file), f->line));
            }
            if (ids.empty()) ids.push_back(locationId(functionId("[no stack]", ""), 0));
            st = stackLocations.emplace(std::make_pair(pi, stackId), std::move(ids)).first;
        }
        // The CUDA call below the program's frames, and below it the kernel a launch ran.
        std::vector<uint64_t> ids;
        if (!kernel.empty()) ids.push_back(locationId(functionId(kernel, "GPU kernel"), 0));
        ids.push_back(locationId(functionId(call, "CUDA"), 0));
        ids.insert(ids.end(), st->second.begin(), st->second.end());
        std::string s;
        packed(s, 1, ids);
        packed(s, 2, {v.calls, v.hostNs, v.blockedNs, v.gpuNs});
        std::string pid;
        uintField(pid, 1, sid("pid"));
        uintField(pid, 3, p.pid);
        bytesField(s, 3, pid);
        // Several captures read as one run: each sample's rank, host and capture where recorded.
        if (!p.captureName.empty()) {
            if (p.identity.rank >= 0) {
                std::string rank;
                uintField(rank, 1, sid("rank"));
                uintField(rank, 3, uint64_t(p.identity.rank));
                bytesField(s, 3, rank);
            }
            for (const auto& [key, text] : {std::pair<const char*, const std::string*>{"host", &p.identity.host}, {"capture", &p.captureName}}) {
                if (text->empty()) continue;
                std::string label;
                uintField(label, 1, sid(key));
                uintField(label, 2, sid(*text));
                bytesField(s, 3, label);
            }
        }
        if (runOf[pi]) {
            std::string run;
            uintField(run, 1, sid("run"));
            uintField(run, 3, runOf[pi]);
            bytesField(s, 3, run);
        }
        bytesField(sampleMsgs, 2, s);
    }

    std::string profile;
    auto valueType = [&](uint32_t field, const char* type, const char* unit) {
        std::string vt;
        uintField(vt, 1, sid(type));
        uintField(vt, 2, sid(unit));
        bytesField(profile, field, vt);
    };
    valueType(1, "calls", "count");
    valueType(1, "cuda_host", "nanoseconds");
    valueType(1, "blocked", "nanoseconds");
    valueType(1, "gpu", "nanoseconds");
    profile += sampleMsgs;
    {
        // One mapping, the first process's program, whose functions, files and lines are all known.
        std::string m, program = capture.processes.empty() ? std::string() : capture.processes[0].command;
        if (const size_t space = program.find(' '); space != std::string::npos) program.resize(space);
        uintField(m, 1, 1);
        uintField(m, 5, sid(program));
        for (uint32_t field : {7u, 8u, 9u, 10u}) uintField(m, field, 1);
        bytesField(profile, 3, m);
    }
    profile += locationMsgs;
    profile += functionMsgs;
    const uint64_t durationNs = last > first ? last - first : 0;
    const uint64_t comment = sid("gpuspy: host stacks of CUDA calls; gpu = measured GPU spans of the work they submitted "
                                       "(untimed work is not in it)");
    const uint64_t defaultType = sid("cuda_host");
    for (const std::string& s : str.items()) bytesField(profile, 6, s);
    // time_nanos: wall-clock time of the capture's start where the shim gave it.
    uint64_t realStart = 0;
    for (const Process& p : capture.processes)
        if (p.startRealtimeNs && (!realStart || p.startRealtimeNs < realStart)) realStart = p.startRealtimeNs;
    uintField(profile, 9, realStart);
    uintField(profile, 10, durationNs);
    tag(profile, 13, 0);
    varint(profile, comment);
    uintField(profile, 14, defaultType);
    return gzip(profile);
}

}  // namespace gpuspy::collect
