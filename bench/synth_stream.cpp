// bench/synth_stream.cpp: the synthetic stream of synth_stream.h, record by record through the wire codec.
#include "bench/synth_stream.h"

#include "wire/codec.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace gpuspy::bench {

namespace {

using namespace gpuspy::wire;

struct ApiSpec {
    const char* name;
    Category category;
};
// Ids as the shim would send them (any ids work: the stream defines them).
enum ApiId : uint16_t { kLaunch = 1, kHtoD, kDtoH, kEventRecord, kQuery, kStreamSync, kAlloc, kFree, kApiEnd };
const ApiSpec kApiSpecs[kApiEnd] = {
    {"", Category::Other},
    {"cuLaunchKernel", Category::Launch},
    {"cuMemcpyHtoDAsync_v2", Category::Transfer},
    {"cuMemcpyDtoHAsync_v2", Category::Transfer},
    {"cuEventRecord", Category::Other},
    {"cuStreamQuery", Category::Sync},
    {"cuStreamSynchronize", Category::Sync},
    {"cuMemAlloc_v2", Category::Alloc},
    {"cuMemFree_v2", Category::Alloc},
};

// One training-step-like iteration per thread: 24 calls, 17 of them launches.
const ApiId kStep[] = {kHtoD,   kLaunch, kLaunch, kLaunch, kLaunch, kLaunch, kLaunch, kLaunch, kLaunch,
                       kEventRecord, kQuery, kLaunch, kLaunch, kLaunch, kLaunch, kLaunch, kLaunch, kLaunch,
                       kLaunch, kLaunch, kDtoH, kQuery, kStreamSync, kEventRecord};
constexpr uint32_t kStepLen = sizeof kStep / sizeof kStep[0];
constexpr uint32_t kStacks = 256;
constexpr uint32_t kKernels = 48;
constexpr uint32_t kPid = 4242;
const char* const kModules[] = {"/opt/app/bin/train", "/usr/lib/x86_64-linux-gnu/libtorch_cuda.so",
                                "/usr/local/cuda/lib64/libcudart.so.13"};
constexpr uint64_t kModuleBase[] = {0x555555554000ull, 0x7f1234000000ull, 0x7f1250000000ull};
constexpr uint64_t kModuleSize = 0x4000000ull;

template <class Body>
void put(std::vector<uint8_t>& out, const Body& body)
{
    const size_t at = out.size();
    out.resize(at + encodedSize<Body>());
    encode(out.data() + at, out.size() - at, body);
}

template <class Body>
void putVar(std::vector<uint8_t>& out, const Body& head, const void* tail, uint32_t n)
{
    const size_t at = out.size();
    out.resize(at + encodedSize<Body>(n));
    encodeVar(out.data() + at, out.size() - at, head, tail, n);
}

}  // namespace

SynthStream::SynthStream(uint64_t records, uint32_t threads, uint64_t seed) : m_target(records), m_rng(seed * 0x9E3779B97F4A7C15ull + 1)
{
    for (uint32_t i = 0; i < threads; ++i)
        m_threads.push_back(Thread{kPid + 1 + i, 1000000000ull + i * 777, i * 5 % kStepLen, 0x1000 + i * 0x100, 0});
}

uint64_t SynthStream::rnd()
{
    m_rng ^= m_rng << 13;
    m_rng ^= m_rng >> 7;
    m_rng ^= m_rng << 17;
    return m_rng;
}

void SynthStream::preamble(std::vector<uint8_t>& out)
{
    const StreamHeader h = makeStreamHeader(kPid, 1000000000ull, 1764460800000000000ull);
    const size_t at = out.size();
    out.resize(at + sizeof h);
    std::memcpy(out.data() + at, &h, sizeof h);

    const char cmd[] = "python\0train.py\0--epochs\0" "3";
    ProcessBody p{};
    p.pid = kPid;
    p.ppid = 1;
    p.startMonotonicNs = 1000000000ull;
    p.startRealtimeNs = 1764460800000000000ull;
    p.length = sizeof cmd - 1;
    putVar(out, p, cmd, p.length);
    ++m_written;
    for (uint16_t i = 1; i < kApiEnd; ++i) {
        ApiDefBody a{};
        a.apiId = i;
        a.category = kApiSpecs[i].category;
        a.length = uint32_t(strlen(kApiSpecs[i].name));
        putVar(out, a, kApiSpecs[i].name, a.length);
        ++m_written;
    }
    const char dev[] = "gpuspy simulated GPU 0";
    DeviceDefBody d{0, uint32_t(sizeof dev - 1)};
    putVar(out, d, dev, d.length);
    ++m_written;
    for (const Thread& t : m_threads) {
        const std::string name = "worker-" + std::to_string(t.tid - kPid);
        ThreadDefBody td{t.tid, uint32_t(name.size())};
        putVar(out, td, name.data(), td.length);
        ++m_written;
    }
    for (size_t m = 0; m < 3; ++m) {
        ModuleDefBody md{};
        md.start = kModuleBase[m];
        md.end = kModuleBase[m] + kModuleSize;
        md.bias = kModuleBase[m];
        md.length = uint32_t(strlen(kModules[m]));
        putVar(out, md, kModules[m], md.length);
        ++m_written;
    }
    for (uint32_t k = 1; k <= kKernels; ++k) {
        char name[128];
        const int n = snprintf(name, sizeof name, "_ZN2at6native29vectorized_elementwise_kernelILi%uENS0_11FunctorOpEEEviT0_", k);
        KernelDefBody kd{k, uint32_t(n)};
        putVar(out, kd, name, kd.length);
        ++m_written;
    }
    for (uint32_t s = 1; s <= kStacks; ++s) {
        uint64_t pcs[32];
        const uint32_t depth = 12 + uint32_t(rnd() % 21);
        for (uint32_t f = 0; f < depth; ++f) {
            const size_t m = f < 3 ? 2 : f < 10 ? 1 : 0;  // cudart innermost, then the framework, then the app
            pcs[f] = kModuleBase[m] + 0x1000 + (rnd() % (kModuleSize - 0x2000));
        }
        StackDefBody sd{s, depth};
        putVar(out, sd, pcs, depth * 8);
        ++m_written;
    }
}

void SynthStream::oneOp(std::vector<uint8_t>& out)
{
    Thread& t = m_threads[m_next];
    m_next = (m_next + 1) % m_threads.size();
    const ApiId api = kStep[t.step];
    const uint32_t stepIndex = t.step;
    t.step = (t.step + 1) % kStepLen;

    CallBody c{};
    c.seq = ++m_seq;
    c.tid = t.tid;
    c.apiId = api;
    c.category = kApiSpecs[api].category;
    c.device = 0;
    c.stream = t.stream;
    // Call sites: each step of the loop has its own few stacks (a loop body called from a few places).
    c.stackId = 1 + uint32_t((stepIndex * 11 + (rnd() % 3)) % kStacks);
    uint64_t dur = 0;
    bool span = false;
    uint64_t gpuDur = 0;
    switch (api) {
    case kLaunch: {
        dur = 2800 + rnd() % 600;
        LaunchArgs& l = c.args.launch;
        l.kernelId = 1 + uint32_t((stepIndex * 7 + rnd() % 2) % kKernels);
        l.grid[0] = 128u << (stepIndex % 4);
        l.grid[1] = l.grid[2] = 1;
        l.block[0] = 256;
        l.block[1] = l.block[2] = 1;
        c.flags = kCallDeviceWork | kCallAsync;
        span = (m_calls % 8) == 0;
        c.flags |= span ? kCallGpuTimed : kCallGpuSampledOut;
        gpuDur = 1500 + rnd() % 40000;
        break;
    }
    case kHtoD:
    case kDtoH: {
        dur = 1900 + rnd() % 400;
        TransferArgs& x = c.args.transfer;
        x.bytes = 4096ull << (rnd() % 10);
        x.direction = api == kHtoD ? Direction::HtoD : Direction::DtoH;
        x.src = api == kHtoD ? 0x7f0000000000ull + (rnd() % 64) * 0x100000 : 0x7e0000000000ull + (rnd() % 64) * 0x100000;
        x.dst = api == kHtoD ? 0x7e0000000000ull + (rnd() % 64) * 0x100000 : 0x7f0000000000ull + (rnd() % 64) * 0x100000;
        x.srcMem = api == kHtoD ? MemKind::Pinned : MemKind::Device;
        x.dstMem = api == kHtoD ? MemKind::Device : MemKind::Pinned;
        c.flags = kCallDeviceWork | kCallAsync | kCallGpuTimed;
        span = true;
        gpuDur = 1000 + x.bytes / 25;
        break;
    }
    case kEventRecord:
        dur = 2400 + rnd() % 200;
        c.args.sync.object = 0xe0000 + t.tid;
        break;
    case kQuery:
        dur = 180 + rnd() % 60;
        c.args.sync.object = t.stream;
        c.result = (rnd() % 4) ? 600 : 0;  // CUDA_ERROR_NOT_READY mostly
        break;
    case kStreamSync:
        dur = 5000 + rnd() % 200000;
        c.args.sync.object = t.stream;
        break;
    case kAlloc:
    case kFree:
        dur = 2000 + rnd() % 1000;
        break;
    case kApiEnd: break;
    }
    // The odd allocation turns into an alloc/free pair.
    if (api == kEventRecord && rnd() % 64 == 0) {
        c.apiId = rnd() % 2 ? kAlloc : kFree;
        c.category = Category::Alloc;
        c.args.alloc.ptr = 0x7e0000000000ull + (rnd() % 4096) * 0x10000;
        c.args.alloc.bytes = 1ull << (12 + rnd() % 16);
        c.args.alloc.mem = MemKind::Device;
    }
    c.beginNs = t.clock;
    c.endNs = t.clock + dur;
    t.clock = c.endNs + 150 + rnd() % 1500;
    put(out, c);
    ++m_written;
    ++m_body;
    ++m_calls;
    if (span && m_body < m_target) {
        GpuSpanBody g{};
        g.seq = c.seq;
        g.beginNs = (t.gpuClock > c.endNs ? t.gpuClock : c.endNs + 2000);
        g.endNs = g.beginNs + gpuDur;
        t.gpuClock = g.endNs;
        g.device = 0;
        put(out, g);
        ++m_written;
        ++m_body;
    }
}

void SynthStream::trailer(std::vector<uint8_t>& out)
{
    uint64_t last = 0;
    for (const Thread& t : m_threads) {
        ThreadStatsBody s{};
        s.tid = t.tid;
        s.calls = m_calls / m_threads.size();
        s.overheadNs = s.calls * 150;
        put(out, s);
        ++m_written;
        if (t.clock > last) last = t.clock;
    }
    EndBody e{};
    e.endNs = last + 1000;
    e.recordsMade = m_written + 1;
    put(out, e);
    ++m_written;
}

size_t SynthStream::read(std::vector<uint8_t>& out, size_t cap)
{
    const size_t start = out.size();
    if (m_phase == 0) {
        preamble(out);
        m_phase = 1;
    }
    while (m_phase == 1 && out.size() - start < cap) {
        if (m_body >= m_target) {
            m_phase = 2;
            break;
        }
        oneOp(out);
    }
    if (m_phase == 2 && out.size() - start < cap) {
        trailer(out);
        m_phase = 3;
    }
    return out.size() - start;
}

std::vector<uint8_t> SynthStream::make(uint64_t records, uint32_t threads)
{
    SynthStream s(records, threads);
    std::vector<uint8_t> out;
    out.reserve(records * 110 + (1 << 20));
    while (s.read(out, 1 << 20) > 0) {
    }
    return out;
}

}  // namespace gpuspy::bench
