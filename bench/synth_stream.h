// bench/synth_stream.h: a synthetic but realistic gpuspy stream, encoded with the wire codec, for the
// collector benchmarks: one process, a few threads each running a training-step-like loop (copies
// in, bursts of kernel launches, event records, stream queries, a synchronize, the odd alloc/free),
// GPU spans for every copy and one launch in eight, 256 interned stacks, 48 kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuspy::bench {

class SynthStream {
public:
    // `records`: Call + GpuSpan records to produce (definitions and the trailer come on top).
    explicit SynthStream(uint64_t records, uint32_t threads = 4, uint64_t seed = 1);

    // Appends whole records (at most about `cap` bytes, at least one record while any remain) to
    // `out`; returns the bytes appended, 0 once the stream is complete.
    size_t read(std::vector<uint8_t>& out, size_t cap);

    uint64_t recordsWritten() const { return m_written; }  // every record, definitions included
    uint64_t bodyRecords() const { return m_body; }        // Call + GpuSpan

    // The whole stream in one buffer.
    static std::vector<uint8_t> make(uint64_t records, uint32_t threads = 4);

private:
    struct Thread {
        uint32_t tid;
        uint64_t clock;
        uint32_t step;
        uint64_t stream;
        uint64_t gpuClock;
    };
    void preamble(std::vector<uint8_t>& out);
    void trailer(std::vector<uint8_t>& out);
    void oneOp(std::vector<uint8_t>& out);
    uint64_t rnd();

    uint64_t m_target;
    uint64_t m_body = 0;
    uint64_t m_written = 0;
    uint64_t m_seq = 0;
    uint64_t m_rng;
    uint64_t m_calls = 0;
    int m_phase = 0;  // 0 preamble, 1 body, 2 trailer, 3 done
    size_t m_next = 0;
    std::vector<Thread> m_threads;
};

}  // namespace gpuspy::bench
