// collector/ingest/capture_file.h: the capture file (.gspy) the collector writes and every command reads.
//
// Layout (little-endian): a CaptureHeader, then chunks, each a ChunkHeader and a zstd frame (with
// its content checksum) of at most kMaxChunkRaw bytes:
//   Stream  - the next piece of stream `stream`'s bytes exactly as validated on arrival (a
//             StreamHeader, then wire records): concatenated per stream they replay the stream;
//   Symbols - a self-contained wire stream of Symbol records for stream `stream`, written after the
//             run while the binaries were still there (symbolization);
//   Error   - text: why stream `stream` was cut short (its valid prefix is what the Stream chunks hold);
//   Run     - one run of a repeated recording (`gpuspy record --repeat N`), written when the run has
//             ended: its index, the streams its processes sent (a contiguous range: runs follow one
//             another) and the command's exit status (CaptureRunBody). A capture without Run chunks
//             holds one run;
//   Outside - a process of the recorded tree that is not in the capture's streams (it ran without the
//             shim) or wrote a capture of its own (merged into this one where it could be read):
//             CaptureOutsideBody, then its command line and that capture's path;
//   End     - the last chunk: totals (CaptureEndBody). A capture without it was not finished (the
//             collector was killed): everything before is still read.
// Chunks of different streams interleave: the collector writes as data arrives, so a capture is
// useful even when the collector dies. A reader also accepts a bare stream file written by the shim.
#pragma once

#include "collector/model/model.h"
#include "wire/codec.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuspy::collect {

inline constexpr uint32_t kCaptureVersionMajor = 1;  // a reader refuses another major
inline constexpr uint32_t kCaptureVersionMinor = 2;  // 1: Run chunks, 2: Outside chunks; a reader skips chunk kinds it does not know
inline constexpr uint32_t kMaxChunkRaw = 4u << 20;   // bounds every allocation of the reader
inline constexpr uint32_t kMaxStreams = 1u << 16;  // processes per capture: bounds a reader's state

struct CaptureHeader {
    char magic[8];  // wire::kCaptureMagic
    uint32_t versionMajor;
    uint32_t versionMinor;
    uint32_t headerSize;  // sizeof(CaptureHeader) when written
    uint32_t flags;       // 0
    uint64_t createdRealtimeNs;
};
static_assert(sizeof(CaptureHeader) == 32);

enum class ChunkKind : uint16_t { Stream = 1, Symbols = 2, Error = 3, End = 4, Run = 5, Outside = 6 };

struct ChunkHeader {
    uint32_t magic;       // kChunkMagic: catches a reader that lost its place
    uint16_t kind;        // ChunkKind
    uint16_t compression; // 0 = stored, 1 = zstd
    uint32_t stream;      // index of the stream (process) it belongs to, in order of first appearance
    uint32_t rawSize;     // <= kMaxChunkRaw
    uint32_t storedSize;  // bytes that follow
    uint32_t reserved;    // 0
};
static_assert(sizeof(ChunkHeader) == 24);
inline constexpr uint32_t kChunkMagic = 0x4b434753;  // "SGCK"

struct CaptureEndBody {
    uint64_t badStreams;
    uint32_t streams;
    uint32_t pad0;
};
static_assert(sizeof(CaptureEndBody) == 16);

struct CaptureRunBody {
    uint32_t run;          // 0, 1, ... in the order the runs were made
    uint32_t firstStream;  // its processes' streams: [firstStream, firstStream + streams)
    uint32_t streams;
    int32_t exitStatus;    // the command's (128+N: killed by signal N)
    uint64_t beginNs;      // CLOCK_MONOTONIC of the collector when the run started and ended
    uint64_t endNs;
};
static_assert(sizeof(CaptureRunBody) == 32);

struct CaptureOutsideBody {
    uint32_t pid;
    uint32_t ppid;
    uint32_t why;            // OutsideWhy
    uint32_t cuda;           // OutsideCuda
    uint32_t merged;         // 1: its own capture was read into this one
    uint32_t commandLength;  // then the command line's bytes, then the capture path's
    uint32_t pathLength;
    uint32_t pad0;
};
static_assert(sizeof(CaptureOutsideBody) == 32);

// Writes a capture incrementally. The file is created with mode 0600, never through a symlink, and
// never over an existing file unless `force` (then an existing regular file is replaced). Throws
// std::runtime_error naming the file when it cannot be created. A write that fails later (a full
// disk, a quota, a file size limit) does not throw: the capture is cut back to its last whole chunk,
// nothing more is written, and failed() says so; the collector goes on reading its clients, whose
// records are then counted but not kept, rather than leave them to spill files of their own.
class CaptureWriter {
public:
    CaptureWriter(const std::string& path, bool force);
    ~CaptureWriter();
    CaptureWriter(const CaptureWriter&) = delete;
    CaptureWriter& operator=(const CaptureWriter&) = delete;

    const std::string& path() const { return m_path; }
    // A new stream; returns its index.
    uint32_t addStream();
    // The next validated bytes of a stream (split into chunks as needed).
    void writeStream(uint32_t stream, const void* data, size_t n);
    void writeError(uint32_t stream, std::string_view message);
    // The Symbol records for process `proc` (its symbols map), after symbolization.
    void writeSymbols(uint32_t stream, const Process& proc);
    // Streams added so far (the next stream's index).
    uint32_t streams() const { return m_streams; }
    // A Run chunk: one run of a repeated recording has ended.
    void writeRun(const CaptureRunBody& run);
    // An Outside chunk: a process of the tree not recorded through the collector's socket.
    void writeOutside(const OutsideProcess& p);
    // Copies every stream of the capture (or bare stream file) at `path` into new streams of this one,
    // as far as it reads validly; returns how many, or throws std::runtime_error naming why not.
    uint32_t appendStreamsOf(const std::string& path);
    // The End chunk; flushes and closes. Without it the capture reads as unfinished.
    void finish(uint64_t badStreams);
    uint64_t bytesWritten() const { return m_written; }
    // Whether a write failed: error() says why and where ("No space left on device at offset N"),
    // unwrittenBytes() how many bytes (before compression) were not written since.
    bool failed() const { return m_errno != 0; }
    int failedErrno() const { return m_errno; }
    const std::string& error() const { return m_error; }
    uint64_t unwrittenBytes() const { return m_unwritten; }

private:
    void writeChunk(ChunkKind kind, uint32_t stream, const void* data, size_t n);
    bool writeAll(const void* data, size_t n);  // false: failed, m_error set

    std::string m_path;
    int m_fd = -1;
    uint32_t m_streams = 0;
    uint64_t m_written = 0;
    int m_errno = 0;
    std::string m_error;
    uint64_t m_unwritten = 0;
    void* m_cctx = nullptr;  // ZSTD_CCtx
    std::vector<uint8_t> m_buf;
};

// Encodes a process's symbols as a wire stream of Symbol records (StreamHeader first).
std::vector<uint8_t> encodeSymbols(const Process& proc);

// Writes a whole capture at once: `streams[i]` holds the validated stream bytes of
// capture.processes[i] (symbols and stream errors are taken from the processes).
void writeCapture(const std::string& path, const Capture& capture, const std::vector<std::vector<uint8_t>>& streams,
                  bool force);

struct ReadOptions {
    // Called for every record after it has been applied to its process (for `gpuspy dump`, and for the
    // streaming report, which takes the events from here).
    std::function<void(const Process&, const wire::RecordView&)> onRecord;
    // Called once per process of the result, in the result's order, when its stream has been read to
    // the end (symbols and stream errors applied), just before it is moved into the Capture.
    std::function<void(const Process&)> onProcess;
    // Called just before onProcess, with the process to complete: `report` symbolizes here a process
    // whose capture holds no symbols (a stream the shim wrote alone).
    std::function<void(Process&)> completeProcess;
    // Called with each piece of validated stream bytes (a Stream chunk's, or a bare stream's), by
    // the stream's index in the file (the merge of a capture into another).
    std::function<void(uint32_t, const uint8_t*, size_t)> onStreamBytes;
    // false: the processes keep definitions and totals only, not their Call, GpuSpan and Nvtx records,
    // so memory does not grow with the capture (see StreamIngest::setKeepEvents).
    bool keepEvents = true;
    // With keepEvents: how many calls to keep over the whole capture; the processes whose calls pass it
    // keep none (Process::eventsDropped), so memory stays bounded (`report` keeps them for the replay).
    uint64_t keepCallsUpTo = UINT64_MAX;
    // With keepCallsUpTo: a process past it keeps a window of its latest calls, no more than it held when
    // the budget ran out (StreamIngest::setWindowPastBudget, Process::windowed), rather than none.
    bool windowPastBudget = false;
    // Added to every host time of every stream (StreamIngest::setTimeShift): this capture put on the
    // clock of another read with it as one run. 0: as recorded.
    int64_t timeShiftNs = 0;
    // Process::captureName of every process read (several captures read as one run); empty: none.
    std::string captureName;
};

// What readCapture noticed beyond the per-process stream errors.
struct ReadInfo {
    bool bareStream = false;  // a file the shim wrote alone, not a collector capture
    bool finished = true;     // the capture had its End chunk
    std::string damage;       // "<what> at offset N" if the file is damaged part-way; empty if not
};

// Reads a capture made by the collector, or a bare stream file written by the shim. Throws
// std::runtime_error("<path>: <what> at offset N") when nothing in the file can be used (unreadable,
// not gpuspy, wrong version, damaged header); otherwise keeps everything valid before any damage and
// notes the damage (Process::streamError, Capture::badStreams, info->damage).
Capture readCapture(const std::string& path, const ReadOptions& options = {}, ReadInfo* info = nullptr);

}  // namespace gpuspy::collect
