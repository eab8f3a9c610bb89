// tests/collector/fuzz/fuzz_capture_reader.cpp: libFuzzer target for readCapture (captures and bare
// shim streams): any input either throws std::runtime_error or yields a capture; no crash, no hang,
// no allocation beyond the format's bounds.
#include "collector/capture_file.h"

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
    size_t records = 0;
    gpuspy::collect::ReadOptions options;
    options.onRecord = [&](const gpuspy::collect::Process&, const gpuspy::wire::RecordView&) { ++records; };
    try {
        gpuspy::collect::ReadInfo info;
        gpuspy::collect::readCapture(path, options, &info);
    } catch (const std::runtime_error&) {
    }
    return 0;
}
