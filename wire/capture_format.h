// wire/capture_format.h: the on-disk layout of a capture file (.gspy) as the shim writes it when no
// collector takes its stream: a CaptureHeader, then Stream chunks, each a ChunkHeader and a zstd frame
// of the stream's bytes. The same layout as the collector's capture (collector/ingest/capture_file.h, which
// documents every chunk kind and reads both); the two definitions must agree (sizes asserted).
#pragma once

#include "wire/format.h"

#include <cstdint>

namespace gpuspy::wire {

inline constexpr uint32_t kCaptureFileMajor = 1;
inline constexpr uint32_t kCaptureFileMinor = 0;
inline constexpr uint32_t kCaptureChunkMagic = 0x4b434753;  // "SGCK"
inline constexpr uint32_t kCaptureMaxChunkRaw = 4u << 20;
inline constexpr uint16_t kChunkStream = 1;
inline constexpr uint16_t kChunkEnd = 4;

struct CaptureFileHeader {
    char magic[8];  // kCaptureMagic
    uint32_t versionMajor;
    uint32_t versionMinor;
    uint32_t headerSize;
    uint32_t flags;
    uint64_t createdRealtimeNs;
};
static_assert(sizeof(CaptureFileHeader) == 32);

struct CaptureChunkHeader {
    uint32_t magic;        // kCaptureChunkMagic
    uint16_t kind;         // kChunkStream, kChunkEnd
    uint16_t compression;  // 0 = stored, 1 = zstd
    uint32_t stream;
    uint32_t rawSize;      // <= kCaptureMaxChunkRaw
    uint32_t storedSize;
    uint32_t reserved;
};
static_assert(sizeof(CaptureChunkHeader) == 24);

struct CaptureFileEnd {
    uint64_t badStreams;
    uint32_t streams;
    uint32_t pad0;
};
static_assert(sizeof(CaptureFileEnd) == 16);

}  // namespace gpuspy::wire
