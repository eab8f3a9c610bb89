// tests/shim/shim_capture_file.h: the stream inside a capture file the shim wrote alone (no collector):
// the collector's layout, a header and zstd chunks (wire/capture_format.h). For the test and bench
// tools that read the shim's files without the collector's libraries (compare_capture, stream_sink).
#pragma once

#include "wire/capture_format.h"

#include <zstd.h>

#include <cstring>
#include <vector>

namespace gpuspy::test {

// `data` is a whole file. A capture file becomes its Stream chunks' bytes, in order (up to the first
// damaged chunk); a bare stream file is left as it is.
template <class Bytes>
void unwrapShimCapture(Bytes& data)
{
    if (data.size() < sizeof(wire::CaptureFileHeader) || std::memcmp(data.data(), wire::kCaptureMagic, 8) != 0) return;
    Bytes stream;
    size_t at = sizeof(wire::CaptureFileHeader);
    while (at + sizeof(wire::CaptureChunkHeader) <= data.size()) {
        wire::CaptureChunkHeader h;
        std::memcpy(&h, data.data() + at, sizeof h);
        at += sizeof h;
        if (h.magic != wire::kCaptureChunkMagic || h.rawSize > wire::kCaptureMaxChunkRaw || h.storedSize > data.size() - at)
            break;
        if (h.kind == wire::kChunkStream) {
            const size_t old = stream.size();
            stream.resize(old + h.rawSize);
            if (h.compression == 0 && h.storedSize == h.rawSize) {
                std::memcpy(stream.data() + old, data.data() + at, h.rawSize);
            } else if (h.compression != 1 ||
                       ZSTD_decompress(stream.data() + old, h.rawSize, data.data() + at, h.storedSize) != h.rawSize) {
                stream.resize(old);
                break;
            }
        }
        at += h.storedSize;
    }
    data.swap(stream);
}

}  // namespace gpuspy::test
