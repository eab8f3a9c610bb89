// tests/unit/collector/streams.h: hand-built wire streams for the collector's tests.
#pragma once

#include "wire/codec.h"

#include <cstring>
#include <string>
#include <vector>

namespace gpuspy::test {

using namespace gpuspy::wire;

class StreamBuilder {
public:
    explicit StreamBuilder(uint32_t pid = 42, uint64_t start = 1000)
    {
        const StreamHeader h = makeStreamHeader(pid, start, 1700000000000000000ull);
        put(&h, sizeof h);
    }

    template <class Body>
    StreamBuilder& fixed(const Body& b)
    {
        uint8_t buf[sizeof(RecordHeader) + sizeof(Body) + 8];
        const size_t n = encode(buf, sizeof buf, b);
        put(buf, n);
        ++records;
        return *this;
    }
    template <class Body>
    StreamBuilder& var(const Body& b, const void* tail, uint32_t n)
    {
        std::vector<uint8_t> buf(encodedSize<Body>(n));
        const size_t w = encodeVar(buf.data(), buf.size(), b, tail, n);
        put(buf.data(), w);
        ++records;
        return *this;
    }

    StreamBuilder& process(uint32_t pid, uint32_t ppid, const std::string& argvNul)
    {
        ProcessBody b{pid, ppid, 1000, 1700000000000000000ull, uint32_t(argvNul.size()), 0};
        return var(b, argvNul.data(), uint32_t(argvNul.size()));
    }
    StreamBuilder& api(uint16_t id, const std::string& name, Category c)
    {
        ApiDefBody b{id, c, 0, uint32_t(name.size())};
        return var(b, name.data(), uint32_t(name.size()));
    }
    StreamBuilder& kernel(uint32_t id, const std::string& name)
    {
        KernelDefBody b{id, uint32_t(name.size())};
        return var(b, name.data(), uint32_t(name.size()));
    }
    StreamBuilder& stack(uint32_t id, const std::vector<uint64_t>& pcs)
    {
        StackDefBody b{id, uint32_t(pcs.size())};
        return var(b, pcs.data(), uint32_t(pcs.size() * 8));
    }
    StreamBuilder& module(uint64_t start, uint64_t end, uint64_t bias, const std::string& path)
    {
        ModuleDefBody b{start, end, bias, uint32_t(path.size()), 0};
        return var(b, path.data(), uint32_t(path.size()));
    }
    StreamBuilder& thread(uint32_t tid, const std::string& name)
    {
        ThreadDefBody b{tid, uint32_t(name.size())};
        return var(b, name.data(), uint32_t(name.size()));
    }
    StreamBuilder& device(int32_t dev, const std::string& name)
    {
        DeviceDefBody b{dev, uint32_t(name.size())};
        return var(b, name.data(), uint32_t(name.size()));
    }
    StreamBuilder& string(uint32_t id, const std::string& text)
    {
        StringDefBody b{id, uint32_t(text.size())};
        return var(b, text.data(), uint32_t(text.size()));
    }
    StreamBuilder& notice(uint32_t code, const std::string& text)
    {
        NoticeBody b{code, uint32_t(text.size())};
        return var(b, text.data(), uint32_t(text.size()));
    }
    StreamBuilder& launch(uint64_t seq, uint16_t apiId, uint32_t kernelId, uint64_t begin, uint64_t end,
                          uint32_t stackId = 0)
    {
        CallBody c{};
        c.seq = seq;
        c.beginNs = begin;
        c.endNs = end;
        c.tid = 7;
        c.stackId = stackId;
        c.apiId = apiId;
        c.category = Category::Launch;
        c.flags = kCallAsync | kCallDeviceWork | kCallGpuTimed;
        c.args.launch.kernelId = kernelId;
        c.args.launch.grid[0] = 256;
        c.args.launch.grid[1] = c.args.launch.grid[2] = 1;
        c.args.launch.block[0] = 128;
        c.args.launch.block[1] = c.args.launch.block[2] = 1;
        return fixed(c);
    }
    StreamBuilder& copy(uint64_t seq, uint16_t apiId, uint64_t bytes, uint64_t begin, uint64_t end)
    {
        CallBody c{};
        c.seq = seq;
        c.beginNs = begin;
        c.endNs = end;
        c.tid = 7;
        c.apiId = apiId;
        c.category = Category::Transfer;
        c.flags = kCallImplicitSync | kCallDeviceWork;
        c.args.transfer.bytes = bytes;
        c.args.transfer.direction = Direction::HtoD;
        c.args.transfer.srcMem = MemKind::Pageable;
        c.args.transfer.dstMem = MemKind::Device;
        return fixed(c);
    }
    StreamBuilder& span(uint64_t seq, uint64_t begin, uint64_t end, int32_t dev = 0)
    {
        return fixed(GpuSpanBody{seq, begin, end, dev, 0});
    }
    StreamBuilder& end(uint64_t endNs, uint64_t made)
    {
        EndBody e{};
        e.endNs = endNs;
        e.recordsMade = made;
        return fixed(e);
    }
    // Raw bytes, for damage.
    StreamBuilder& put(const void* p, size_t n)
    {
        auto b = static_cast<const uint8_t*>(p);
        bytes.insert(bytes.end(), b, b + n);
        return *this;
    }

    std::vector<uint8_t> bytes;
    size_t records = 0;
};

// A small process with every kind of record: 2 launches, 1 copy, their spans, NVTX, stats, End.
inline StreamBuilder sampleProcess(uint32_t pid = 42)
{
    StreamBuilder s(pid);
    s.process(pid, 1, std::string("./app\0--flag\0", 13))
        .api(1, "cuLaunchKernel", Category::Launch)
        .api(2, "cuMemcpyHtoD_v2", Category::Transfer)
        .kernel(3, "_Z6scalePfi")
        .module(0x400000, 0x500000, 0, "/bin/app")
        .stack(5, {0x401000, 0x402000})
        .thread(7, "main")
        .device(0, "Simulated GPU")
        .string(9, "step")
        .launch(1, 1, 3, 2000, 2500, 5)
        .span(1, 2600, 7600)
        .copy(2, 2, 4096, 8000, 9000)
        .span(2, 8100, 8900)
        .launch(3, 1, 3, 10000, 10400, 5);
    NvtxBody n{};
    n.timeNs = 1500;
    n.tid = 7;
    n.messageId = 9;
    n.kind = NvtxKind::Push;
    s.fixed(n);
    s.fixed(ThreadStatsBody{7, 0, 3, 0, 1234});
    s.fixed(ClockBody{0, 0, -50, 10});
    s.notice(1, "sampling on");
    s.end(20000, 17);
    return s;
}

}  // namespace gpuspy::test
