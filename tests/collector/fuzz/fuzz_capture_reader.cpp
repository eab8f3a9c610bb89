// tests/collector/fuzz/fuzz_capture_reader.cpp: libFuzzer target for readCapture (captures and bare
// shim streams) feeding the streaming report, as `gpuspy report` does: any input either throws
// std::runtime_error or yields a capture and a report; no crash, no hang, no allocation beyond the
// format's bounds.
#include "collector/analyze/analyze.h"
#include "collector/ingest/capture_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const int fd = memfd_create("gpuspy-fuzz", MFD_CLOEXEC);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) return 0;
    gpuspy::collect::StreamAnalyzer analyzer(gpuspy::collect::ReportOptions{});
    gpuspy::collect::ReadOptions options;
    options.keepEvents = false;
    options.onRecord = [&](const gpuspy::collect::Process& p, const gpuspy::wire::RecordView& v) { analyzer.onRecord(p, v); };
    options.onProcess = [&](const gpuspy::collect::Process& p) { analyzer.onProcess(p); };
    try {
        gpuspy::collect::ReadInfo info;
        const gpuspy::collect::Capture capture = gpuspy::collect::readCapture(path, options, &info);
        (void)analyzer.finish(capture.badStreams);
    } catch (const std::runtime_error&) {
    }
    return 0;
}
