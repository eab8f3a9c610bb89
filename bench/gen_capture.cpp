// bench/gen_capture.cpp: writes the synthetic stream of synth_stream.h as a bare stream file (what the
// shim writes without a collector; `gpuspy report` reads it) and, optionally, the same bytes as a
// collector capture (.gspy: zstd chunks), to time `gpuspy report` and to measure bytes per record.
// With --convert, turns an existing stream file (one the shim wrote) into a .gspy the same way.
//
//   gen_capture RECORDS RAW_OUT [GSPY_OUT]
//   gen_capture --convert STREAM_IN GSPY_OUT
#include "bench/synth_stream.h"
#include "collector/ingest/capture_file.h"
#include "wire/codec.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace gpuspy;

uint64_t fileSize(const std::string& path)
{
    struct stat st{};
    return stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

void report(const char* what, uint64_t records, uint64_t calls, const std::string& raw, const std::string& gspy)
{
    const uint64_t rawBytes = fileSize(raw), gspyBytes = gspy.empty() ? 0 : fileSize(gspy);
    printf("{\"what\":\"%s\",\"records\":%llu,\"calls\":%llu,\"raw_bytes\":%llu,\"raw_bytes_per_record\":%.2f,"
           "\"gspy_bytes\":%llu,\"gspy_bytes_per_record\":%.2f}\n",
           what, (unsigned long long)records, (unsigned long long)calls, (unsigned long long)rawBytes,
           records ? double(rawBytes) / double(records) : 0.0, (unsigned long long)gspyBytes,
           records ? double(gspyBytes) / double(records) : 0.0);
}

int generate(uint64_t n, const std::string& raw, const std::string& gspy)
{
    FILE* f = fopen(raw.c_str(), "wb");
    if (!f) {
        perror(raw.c_str());
        return 1;
    }
    std::unique_ptr<collect::CaptureWriter> w;
    uint32_t stream = 0;
    if (!gspy.empty()) {
        w = std::make_unique<collect::CaptureWriter>(gspy, true);
        stream = w->addStream();
    }
    bench::SynthStream s(n);
    std::vector<uint8_t> buf;
    uint64_t calls = 0;
    for (;;) {
        buf.clear();
        if (s.read(buf, 4 << 20) == 0) break;
        if (fwrite(buf.data(), 1, buf.size(), f) != buf.size()) {
            perror(raw.c_str());
            return 1;
        }
        if (w) w->writeStream(stream, buf.data(), buf.size());
    }
    calls = s.bodyRecords();
    fclose(f);
    if (w) w->finish(0);
    report("synthetic", s.recordsWritten(), calls, raw, gspy);
    return 0;
}

int convert(const std::string& in, const std::string& gspy)
{
    FILE* f = fopen(in.c_str(), "rb");
    if (!f) {
        perror(in.c_str());
        return 1;
    }
    collect::CaptureWriter w(gspy, true);
    const uint32_t stream = w.addStream();
    wire::StreamDecoder d;
    uint64_t calls = 0;
    std::vector<uint8_t> buf(4 << 20);
    for (;;) {
        const size_t r = fread(buf.data(), 1, buf.size(), f);
        if (r == 0) break;
        d.feed(buf.data(), r, [&](const wire::RecordView& v) { calls += v.type == wire::RecordType::Call; });
        w.writeStream(stream, buf.data(), r);
    }
    fclose(f);
    w.finish(d.error() == wire::DecodeError::None ? 0 : 1);
    report("converted", d.records(), calls, in, gspy);
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        if (argc == 4 && strcmp(argv[1], "--convert") == 0) return convert(argv[2], argv[3]);
        if (argc == 3 || argc == 4) return generate(strtoull(argv[1], nullptr, 10), argv[2], argc == 4 ? argv[3] : "");
    } catch (const std::exception& e) {
        fprintf(stderr, "gen_capture: %s\n", e.what());
        return 1;
    }
    fprintf(stderr, "usage: gen_capture RECORDS RAW_OUT [GSPY_OUT] | gen_capture --convert STREAM_IN GSPY_OUT\n");
    return 2;
}
