// tests/collector/fuzz/fuzz_stream_ingest.cpp: libFuzzer target for the per-connection ingest (the
// wire decoder and the model): the input is fed in pieces whose sizes come from its first byte.
#include "collector/report/dump.h"
#include "collector/ingest/ingest.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0) return 0;
    const size_t piece = 1 + data[0] % 64;
    gpuspy::collect::StreamIngest in;
    // Format every record too: dump must survive whatever ingest accepted.
    in.setObserver([](const gpuspy::collect::Process& p, const gpuspy::wire::RecordView& v) {
        (void)gpuspy::collect::formatRecord(p, v);
    });
    for (size_t at = 1; at < size; at += piece) {
        if (!in.feed(data + at, std::min(piece, size - at))) break;
    }
    in.finish();
    std::vector<uint8_t> raw;
    in.takeValidated(raw);
    // What was kept re-ingests without error.
    gpuspy::collect::StreamIngest again;
    if (!again.feed(raw.data(), raw.size()) || (!raw.empty() && !again.finish() && in.hasHeader())) __builtin_trap();
    return 0;
}
