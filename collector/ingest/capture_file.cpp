// collector/ingest/capture_file.cpp: writing and reading .gspy captures (and bare shim stream files).
#include "collector/ingest/capture_file.h"

#include "collector/ingest/ingest.h"
#include "wire/codec.h"

#include <zstd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <stdexcept>

namespace gpuspy::collect {

namespace {

constexpr int kZstdLevel = 3;
constexpr uint32_t kMaxSymbolText = 16u << 10;  // a function or file name longer than this is cut

std::string errnoText(int e)
{
    return std::strerror(e);
}

[[noreturn]] void fail(const std::string& path, const std::string& what)
{
    throw std::runtime_error(path + ": " + what);
}

uint64_t realtimeNs()
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Sequential reads from a file descriptor that keep track of the offset.
class Input {
public:
    Input(int fd) : m_fd(fd) {}
    // Reads up to n bytes (fewer only at end of file). Throws on an I/O error.
    size_t read(void* out, size_t n)
    {
        size_t got = 0;
        while (got < n) {
            ssize_t r = ::read(m_fd, static_cast<char*>(out) + got, n - got);
            if (r < 0) {
                if (errno == EINTR) continue;
                throw std::runtime_error("read error: " + errnoText(errno) + " at offset " +
                                         std::to_string(m_offset + got));
            }
            if (r == 0) break;
            got += size_t(r);
        }
        m_offset += got;
        return got;
    }
    uint64_t offset() const { return m_offset; }

private:
    int m_fd;
    uint64_t m_offset = 0;
};

struct FdCloser {
    int fd;
    ~FdCloser()
    {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

// ---- writing

CaptureWriter::CaptureWriter(const std::string& path, bool force) : m_path(path)
{
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    m_fd = ::open(path.c_str(), flags, 0600);
    if (m_fd < 0 && errno == EEXIST) {
        struct stat st{};
        if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            fail(path, "is a symbolic link; gpuspy does not write captures through links");
        if (!force) fail(path, "already exists (use -f to overwrite it)");
        if (!S_ISREG(st.st_mode)) fail(path, "exists and is not a regular file; not overwriting it");
        // Replace, not truncate: the new file is ours, 0600, whoever owned the old one.
        if (::unlink(path.c_str()) != 0) fail(path, "cannot remove the old file: " + errnoText(errno));
        m_fd = ::open(path.c_str(), flags, 0600);
    }
    if (m_fd < 0) fail(path, "cannot create the capture: " + errnoText(errno));
    m_cctx = ZSTD_createCCtx();
    if (!m_cctx) {
        ::close(m_fd);
        fail(path, "out of memory (zstd)");
    }
    ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(m_cctx), ZSTD_c_compressionLevel, kZstdLevel);
    ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(m_cctx), ZSTD_c_checksumFlag, 1);
    CaptureHeader h{};
    std::memcpy(h.magic, wire::kCaptureMagic, sizeof h.magic);
    h.versionMajor = kCaptureVersionMajor;
    h.versionMinor = kCaptureVersionMinor;
    h.headerSize = sizeof h;
    h.createdRealtimeNs = realtimeNs();
    if (!writeAll(&h, sizeof h)) {
        ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(m_cctx));
        ::close(m_fd);
        fail(path, "cannot write the capture: " + m_error);
    }
}

CaptureWriter::~CaptureWriter()
{
    if (m_cctx) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(m_cctx));
    if (m_fd >= 0) ::close(m_fd);
}

uint32_t CaptureWriter::addStream()
{
    if (m_streams >= kMaxStreams) fail(m_path, "too many processes in one capture");
    return m_streams++;
}

bool CaptureWriter::writeAll(const void* data, size_t n)
{
    if (m_fd < 0) fail(m_path, "capture already closed");
    auto p = static_cast<const char*>(data);
    while (n > 0) {
        ssize_t w = ::write(m_fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            m_errno = errno;
            m_error = errnoText(errno) + " at offset " + std::to_string(m_written);
            return false;
        }
        p += w;
        n -= size_t(w);
        m_written += uint64_t(w);
    }
    return true;
}

void CaptureWriter::writeChunk(ChunkKind kind, uint32_t stream, const void* data, size_t n)
{
    if (failed()) {
        m_unwritten += n;
        return;
    }
    m_buf.resize(ZSTD_compressBound(n));
    const size_t z = ZSTD_compress2(static_cast<ZSTD_CCtx*>(m_cctx), m_buf.data(), m_buf.size(), data, n);
    if (ZSTD_isError(z)) fail(m_path, std::string("compression failed: ") + ZSTD_getErrorName(z));
    ChunkHeader h{kChunkMagic, uint16_t(kind), 1, stream, uint32_t(n), uint32_t(z), 0};
    const uint64_t at = m_written;
    if (writeAll(&h, sizeof h) && writeAll(m_buf.data(), z)) return;
    // Full disk, quota, file size limit, I/O error: the capture ends with the last whole chunk (a
    // reader sees an unfinished capture, not a damaged one) and nothing more is written to it.
    m_unwritten += n;
    if (::ftruncate(m_fd, off_t(at)) == 0) m_written = at;
}

void CaptureWriter::writeStream(uint32_t stream, const void* data, size_t n)
{
    auto p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        const size_t take = std::min<size_t>(n, kMaxChunkRaw);
        writeChunk(ChunkKind::Stream, stream, p, take);
        p += take;
        n -= take;
    }
}

void CaptureWriter::writeError(uint32_t stream, std::string_view message)
{
    message = message.substr(0, 4096);
    writeChunk(ChunkKind::Error, stream, message.data(), message.size());
}

void CaptureWriter::writeOutside(const OutsideProcess& p)
{
    CaptureOutsideBody b{};
    b.pid = p.pid;
    b.ppid = p.ppid;
    b.why = uint32_t(p.why);
    b.cuda = uint32_t(p.cuda);
    b.merged = p.merged ? 1 : 0;
    const std::string command = p.command.substr(0, 4096), path = p.capturePath.substr(0, 4096);
    b.commandLength = uint32_t(command.size());
    b.pathLength = uint32_t(path.size());
    std::string body(reinterpret_cast<const char*>(&b), sizeof b);
    body += command;
    body += path;
    writeChunk(ChunkKind::Outside, 0, body.data(), body.size());
}

uint32_t CaptureWriter::appendStreamsOf(const std::string& path)
{
    std::map<uint32_t, uint32_t> mine;  // the file's stream index -> ours
    ReadOptions read;
    read.keepEvents = false;
    read.onStreamBytes = [&](uint32_t stream, const uint8_t* data, size_t n) {
        auto it = mine.find(stream);
        if (it == mine.end()) it = mine.emplace(stream, addStream()).first;
        writeStream(it->second, data, n);
    };
    readCapture(path, read);
    return uint32_t(mine.size());
}

void CaptureWriter::writeRun(const CaptureRunBody& run)
{
    writeChunk(ChunkKind::Run, run.run, &run, sizeof run);
}

namespace {

uint32_t moduleIndexOf(const Process& proc, const Frame& f)
{
    uint32_t byName = UINT32_MAX;
    for (size_t i = 0; i < proc.modules.size(); ++i) {
        const ModuleInfo& m = proc.modules[i];
        if (m.path != f.module) continue;
        if (f.address >= m.start && f.address < m.end) return uint32_t(i);
        if (byName == UINT32_MAX) byName = uint32_t(i);
    }
    return byName;
}

// Calls `emit(bytes)` with self-contained symbol streams of at most about kMaxChunkRaw bytes each.
template <class F>
void forEachSymbolStream(const Process& proc, F&& emit)
{
    std::vector<uint64_t> addresses;
    addresses.reserve(proc.symbols.size());
    for (const auto& [address, frames] : proc.symbols) addresses.push_back(address);
    std::sort(addresses.begin(), addresses.end());

    std::vector<uint8_t> out;
    auto start = [&] {
        out.clear();
        const wire::StreamHeader h = wire::makeStreamHeader(proc.pid, proc.startNs, proc.startRealtimeNs);
        out.resize(sizeof h);
        std::memcpy(out.data(), &h, sizeof h);
    };
    start();
    std::string tail;
    for (uint64_t address : addresses) {
        const auto& frames = proc.symbols.at(address);
        for (size_t i = 0; i < frames.size(); ++i) {
            const Frame& f = frames[i];
            tail.assign(f.function, 0, kMaxSymbolText);
            tail.push_back('\0');
            tail.append(f.file, 0, kMaxSymbolText);
            tail.push_back('\0');
            wire::SymbolBody b{};
            b.address = address;
            b.line = f.line;
            b.inlineDepth = uint16_t(std::min<size_t>(frames.size() - 1 - i, UINT16_MAX));
            b.moduleIndex = moduleIndexOf(proc, f);
            const bool unannounced = b.moduleIndex == UINT32_MAX && !f.module.empty();
            if (unannounced || !f.callee.empty()) {
                // A module the process never announced ([vdso], a path spelled differently): its
                // name goes after the file name, where readers of function\0file\0 do not look.
                if (unannounced) tail.append(f.module, 0, kMaxSymbolText);
                tail.push_back('\0');
            }
            if (!f.callee.empty()) {
                // The function the call before this return address calls (Frame::callee), fourth:
                // readers that know three strings stop before it.
                tail.append(f.callee, 0, kMaxSymbolText);
                tail.push_back('\0');
            }
            b.length = uint32_t(tail.size());
            const size_t need = wire::encodedSize<wire::SymbolBody>(b.length);
            if (out.size() + need > kMaxChunkRaw) {
                emit(out);
                start();
            }
            const size_t at = out.size();
            out.resize(at + need);
            wire::encodeVar(out.data() + at, need, b, tail.data(), b.length);
        }
    }
    if (out.size() > sizeof(wire::StreamHeader)) emit(out);
}

}  // namespace

std::vector<uint8_t> encodeSymbols(const Process& proc)
{
    std::vector<uint8_t> all;
    forEachSymbolStream(proc, [&](const std::vector<uint8_t>& part) {
        if (all.empty())
            all = part;
        else
            all.insert(all.end(), part.begin() + sizeof(wire::StreamHeader), part.end());
    });
    return all;
}

void CaptureWriter::writeSymbols(uint32_t stream, const Process& proc)
{
    forEachSymbolStream(proc, [&](const std::vector<uint8_t>& part) {
        writeChunk(ChunkKind::Symbols, stream, part.data(), part.size());
    });
}

void CaptureWriter::finish(uint64_t badStreams)
{
    CaptureEndBody end{badStreams, m_streams, 0};
    writeChunk(ChunkKind::End, 0, &end, sizeof end);
    // A file system that allocates late (or NFS) reports a full disk here rather than at write().
    if (!failed() && ::fsync(m_fd) != 0 && errno != EINVAL && errno != EROFS) {
        m_errno = errno;
        m_error = errnoText(errno) + " when flushing the capture";
    }
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0 && !failed()) {
        m_errno = errno;
        m_error = errnoText(errno) + " when closing the capture";
    }
}

void writeCapture(const std::string& path, const Capture& capture, const std::vector<std::vector<uint8_t>>& streams,
                  bool force)
{
    if (streams.size() != capture.processes.size())
        throw std::invalid_argument("writeCapture: one stream per process expected");
    CaptureWriter w(path, force);
    for (size_t i = 0; i < streams.size(); ++i) {
        const uint32_t s = w.addStream();
        w.writeStream(s, streams[i].data(), streams[i].size());
        const Process& p = capture.processes[i];
        if (!p.streamError.empty()) w.writeError(s, p.streamError);
        if (!p.symbols.empty()) w.writeSymbols(s, p);
    }
    for (const RunInfo& run : capture.runs) {
        // A run's processes are contiguous (runs follow one another): the range they span.
        uint32_t first = uint32_t(streams.size()), last = 0;
        for (size_t i : run.processes) {
            first = std::min(first, uint32_t(i));
            last = std::max(last, uint32_t(i + 1));
        }
        w.writeRun({run.run, run.processes.empty() ? 0 : first, run.processes.empty() ? 0 : last - first,
                    run.exitStatus, run.beginNs, run.endNs});
    }
    w.finish(capture.badStreams);
    if (w.failed()) fail(path, "write error: " + w.error());
}

// ---- reading

namespace {

void readBareStream(const std::string& path, Input& in, const uint8_t* first, size_t firstSize,
                    const ReadOptions& options, Capture& capture, ReadInfo& info)
{
    info.bareStream = true;
    StreamIngest ingest;
    ingest.setKeepRaw(false);
    ingest.setKeepEvents(options.keepEvents);
    ingest.setTimeShift(options.timeShiftNs);
    ingest.process().captureName = options.captureName;
    uint64_t budget = options.keepCallsUpTo;
    if (budget != UINT64_MAX) ingest.setEventBudget(&budget);
    ingest.setWindowPastBudget(options.windowPastBudget);
    if (options.onRecord) ingest.setObserver(options.onRecord);
    auto feed = [&](const uint8_t* data, size_t n) {
        ingest.feed(data, n);
        if (options.onStreamBytes && !ingest.failed()) options.onStreamBytes(0, data, n);
    };
    feed(first, firstSize);
    std::vector<uint8_t> buf(1u << 20);
    while (!ingest.failed()) {
        const size_t n = in.read(buf.data(), buf.size());
        if (n == 0) break;
        feed(buf.data(), n);
    }
    ingest.finish();
    if (!ingest.hasHeader()) fail(path, ingest.error());
    if (ingest.failed()) {
        info.damage = ingest.error();
        capture.badStreams = 1;
    }
    if (options.completeProcess) options.completeProcess(ingest.process());
    if (options.onProcess) options.onProcess(ingest.process());
    capture.processes.push_back(std::move(ingest.process()));
}

struct StreamState {
    std::unique_ptr<StreamIngest> ingest;
    std::string collectorError;  // the Error chunk: damage seen when the collector received it
    // A stream that continues an earlier one of the same process (the shim connected again after
    // the app closed or took over its socket): its chunks go to that stream's ingest, its Symbol
    // records' module indexes shifted by the modules that stream had before.
    StreamState* into = nullptr;
    uint32_t moduleBase = 0;
    bool seen = false;  // a Stream chunk of it has been read
};

// The earlier stream `first` (a Stream chunk's bytes, from its start) continues, if any: one of the
// same process (pid and start instant) that has not ended and is not damaged.
StreamState* continued(std::map<uint32_t, StreamState>& streams, uint32_t index, const std::vector<uint8_t>& first)
{
    if (first.size() < sizeof(wire::StreamHeader)) return nullptr;
    wire::StreamHeader h;
    std::memcpy(&h, first.data(), sizeof h);
    if (std::memcmp(h.magic, wire::kStreamMagic, sizeof h.magic) != 0) return nullptr;
    for (auto& [i, s] : streams) {
        if (i >= index || s.into || !s.ingest || s.ingest->failed() || !s.ingest->hasHeader()) continue;
        const Process& p = s.ingest->process();
        if (p.pid == h.pid && p.startNs == h.startMonotonicNs && !p.ended) return &s;
    }
    return nullptr;
}

void readChunks(const std::string& path, Input& in, const ReadOptions& options, Capture& capture, ReadInfo& info)
{
    // Streams by index; their chunks interleave in any order (each is flushed when it has data).
    std::map<uint32_t, StreamState> streams;
    uint64_t budget = options.keepCallsUpTo;  // calls still to keep, all streams together
    std::vector<CaptureRunBody> runs;
    std::vector<uint8_t> stored, raw;
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dctx) fail(path, "out of memory (zstd)");
    bool ended = false;
    uint64_t endBad = 0;
    auto damage = [&](uint64_t at, const std::string& what) {
        info.damage = what + " at offset " + std::to_string(at);
    };

    while (true) {
        const uint64_t at = in.offset();
        ChunkHeader h{};
        const size_t got = in.read(&h, sizeof h);
        if (got == 0) break;
        if (got < sizeof h) {
            damage(at, "truncated chunk header (" + std::to_string(got) + " of " + std::to_string(sizeof h) + " bytes)");
            break;
        }
        if (h.magic != kChunkMagic || h.reserved != 0) {
            damage(at, "not a chunk header (the file is corrupt)");
            break;
        }
        if (h.compression > 1 || h.rawSize > kMaxChunkRaw ||
            h.storedSize > (h.compression ? ZSTD_compressBound(h.rawSize) : h.rawSize) ||
            (!h.compression && h.storedSize != h.rawSize)) {
            damage(at, "bad chunk header (compression " + std::to_string(h.compression) + ", " +
                           std::to_string(h.storedSize) + " bytes stored for " + std::to_string(h.rawSize) + ")");
            break;
        }
        if (h.stream >= kMaxStreams) {
            damage(at, "chunk of process #" + std::to_string(h.stream) + ", more than a capture holds");
            break;
        }
        stored.resize(h.storedSize);
        const size_t body = in.read(stored.data(), h.storedSize);
        if (body < h.storedSize) {
            damage(at, "truncated chunk (" + std::to_string(body) + " of " + std::to_string(h.storedSize) + " bytes)");
            break;
        }
        if (h.compression) {
            raw.resize(h.rawSize);
            const size_t n = ZSTD_decompressDCtx(dctx.get(), raw.data(), raw.size(), stored.data(), stored.size());
            if (ZSTD_isError(n) || n != h.rawSize) {
                damage(at, std::string("corrupt chunk (") +
                               (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size mismatch") + ")");
                break;
            }
        } else {
            raw.swap(stored);
        }
        const auto kind = ChunkKind(h.kind);
        if (kind == ChunkKind::End) {
            if (h.rawSize < sizeof(CaptureEndBody)) {
                damage(at, "short End chunk");
                break;
            }
            CaptureEndBody e;
            std::memcpy(&e, raw.data(), sizeof e);
            endBad = e.badStreams;
            ended = true;
            break;
        }
        if (kind == ChunkKind::Run) {
            if (h.rawSize < sizeof(CaptureRunBody)) {
                damage(at, "short Run chunk");
                break;
            }
            CaptureRunBody r;
            std::memcpy(&r, raw.data(), sizeof r);
            if (r.streams > kMaxStreams || r.firstStream > kMaxStreams || runs.size() >= kMaxStreams) {
                damage(at, "malformed Run chunk");
                break;
            }
            runs.push_back(r);
            continue;
        }
        if (kind == ChunkKind::Outside) {
            CaptureOutsideBody b;
            if (h.rawSize < sizeof b) {
                damage(at, "short Outside chunk");
                break;
            }
            std::memcpy(&b, raw.data(), sizeof b);
            if (uint64_t(b.commandLength) + b.pathLength > h.rawSize - sizeof b || capture.outside.size() >= kMaxStreams) {
                damage(at, "malformed Outside chunk");
                break;
            }
            OutsideProcess o;
            o.pid = b.pid;
            o.ppid = b.ppid;
            o.why = OutsideWhy(b.why);
            o.cuda = OutsideCuda(b.cuda);
            o.merged = b.merged != 0;
            const char* text = reinterpret_cast<const char*>(raw.data()) + sizeof b;
            o.command.assign(text, b.commandLength);
            o.capturePath.assign(text + b.commandLength, b.pathLength);
            capture.outside.push_back(std::move(o));
            continue;
        }
        if (kind != ChunkKind::Stream && kind != ChunkKind::Symbols && kind != ChunkKind::Error) continue;  // newer minor
        StreamState& self = streams[h.stream];
        if (kind == ChunkKind::Stream && !self.seen) {
            self.seen = true;
            if (StreamState* earlier = continued(streams, h.stream, raw)) {
                self.into = earlier;
                self.moduleBase = earlier->ingest->resume();
            }
        }
        StreamState& s = self.into ? *self.into : self;
        if (!s.ingest) {
            s.ingest = std::make_unique<StreamIngest>();
            s.ingest->setKeepRaw(false);
            s.ingest->setKeepEvents(options.keepEvents);
            s.ingest->setTimeShift(options.timeShiftNs);
            s.ingest->process().captureName = options.captureName;
            if (budget != UINT64_MAX) s.ingest->setEventBudget(&budget);
            s.ingest->setWindowPastBudget(options.windowPastBudget);
            if (options.onRecord) s.ingest->setObserver(options.onRecord);
        }
        if (kind == ChunkKind::Stream) {
            const bool wasOk = !s.ingest->failed();
            const bool fed = wasOk && s.ingest->feed(raw.data(), raw.size());
            if (fed && options.onStreamBytes) options.onStreamBytes(h.stream, raw.data(), raw.size());
            if (wasOk && !fed) {
                // The collector stored validated bytes only: this is damage to the file.
                std::string& error = s.ingest->process().streamError;
                error += " (stream of process #" + std::to_string(h.stream) + ", chunk at file offset " +
                         std::to_string(at) + ")";
                if (info.damage.empty()) info.damage = error;
            }
        } else if (kind == ChunkKind::Error) {
            s.collectorError.assign(reinterpret_cast<const char*>(raw.data()), std::min<size_t>(raw.size(), 4096));
        } else {
            // Symbols: a small stream of its own; only Symbol records are taken from it.
            wire::StreamDecoder d;
            Process& proc = s.ingest->process();
            std::vector<uint8_t> shifted;
            const bool ok = d.feed(raw.data(), raw.size(), [&](const wire::RecordView& v) {
                if (v.type != wire::RecordType::Symbol) return;
                wire::RecordView rv = v;
                auto b = v.as<wire::SymbolBody>();
                if (self.moduleBase && b.moduleIndex != UINT32_MAX) {
                    // A continued stream's modules come after those of the stream it continues.
                    b.moduleIndex += self.moduleBase;
                    shifted.assign(v.body, v.body + v.size);
                    std::memcpy(shifted.data(), &b, sizeof b);
                    rv.body = shifted.data();
                }
                applyRecord(proc, rv);
                if (options.onRecord) options.onRecord(proc, rv);
            });
            if (!ok || !d.finish())
                info.damage = "symbols of process #" + std::to_string(h.stream) + ": " + d.errorMessage() +
                              " (chunk at file offset " + std::to_string(at) + ")";
        }
    }

    info.finished = ended;
    if (!ended && info.damage.empty())
        info.damage = "capture not finished (no End chunk: the collector stopped before writing it) at offset " +
                      std::to_string(in.offset());
    if (streams.empty() && !ended) fail(path, info.damage);

    uint64_t bad = 0;
    std::map<uint32_t, size_t> processOfStream;
    for (auto& [index, s] : streams) {
        if (s.into) continue;  // its records are in the stream it continues
        if (!s.ingest) continue;
        StreamIngest& ingest = *s.ingest;
        if (!s.collectorError.empty()) {
            ingest.fail(s.collectorError);
        } else if (!ingest.failed()) {
            // A stream cut by the end of an unfinished or damaged capture is truncated, not bad
            // data: only a partial record at its end is an error.
            ingest.finish();
        }
        if (ingest.failed()) ++bad;
        if (!ingest.hasHeader()) continue;  // chunks carried only symbols or an error: nothing to show
        if (options.completeProcess) options.completeProcess(ingest.process());
        if (options.onProcess) options.onProcess(ingest.process());
        processOfStream[index] = capture.processes.size();
        capture.processes.push_back(std::move(ingest.process()));
    }
    for (auto& [index, s] : streams)
        if (s.into)
            for (auto& [i, t] : streams)
                if (&t == s.into && processOfStream.count(i)) processOfStream[index] = processOfStream[i];
    capture.badStreams = ended ? std::max(endBad, bad) : bad;
    for (const CaptureRunBody& r : runs) {
        RunInfo run;
        run.run = r.run;
        run.exitStatus = r.exitStatus;
        run.beginNs = r.beginNs;
        run.endNs = r.endNs;
        for (auto it = processOfStream.lower_bound(r.firstStream);
             it != processOfStream.end() && it->first < uint64_t(r.firstStream) + r.streams; ++it)
            if (std::find(run.processes.begin(), run.processes.end(), it->second) == run.processes.end())
                run.processes.push_back(it->second);
        capture.runs.push_back(std::move(run));
    }
}

}  // namespace

Capture readCapture(const std::string& path, const ReadOptions& options, ReadInfo* infoOut)
{
    ReadInfo localInfo;
    ReadInfo& info = infoOut ? *infoOut : localInfo;
    info = ReadInfo{};
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, "cannot open: " + errnoText(errno));
    FdCloser closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) fail(path, "is a directory, not a capture");

    Input in(fd);
    Capture capture;
    try {
        uint8_t first[sizeof(CaptureHeader)];
        const size_t got = in.read(first, sizeof first);
        if (got == 0) fail(path, "empty file, not a gpuspy capture");
        if (got >= sizeof wire::kStreamMagic && std::memcmp(first, wire::kStreamMagic, sizeof wire::kStreamMagic) == 0) {
            readBareStream(path, in, first, got, options, capture, info);
            return capture;
        }
        if (got < sizeof wire::kCaptureMagic ||
            std::memcmp(first, wire::kCaptureMagic, sizeof wire::kCaptureMagic) != 0)
            fail(path, "not a gpuspy capture or stream (bad magic) at offset 0");
        if (got < sizeof(CaptureHeader))
            fail(path, "truncated capture header (" + std::to_string(got) + " bytes) at offset 0");
        CaptureHeader h;
        std::memcpy(&h, first, sizeof h);
        if (h.versionMajor != kCaptureVersionMajor)
            fail(path, "capture format version " + std::to_string(h.versionMajor) + "." + std::to_string(h.versionMinor) +
                           ", this gpuspy reads version " + std::to_string(kCaptureVersionMajor) + " at offset 8");
        if (h.headerSize < sizeof h || h.headerSize > 4096)
            fail(path, "malformed capture header (header size " + std::to_string(h.headerSize) + ") at offset 16");
        std::vector<uint8_t> skip(h.headerSize - sizeof h);
        if (in.read(skip.data(), skip.size()) != skip.size())
            fail(path, "truncated capture header at offset " + std::to_string(in.offset()));
        readChunks(path, in, options, capture, info);
    } catch (const std::runtime_error& e) {
        // I/O errors from Input carry no file name yet.
        const std::string what = e.what();
        if (what.rfind(path + ": ", 0) == 0) throw;
        fail(path, what);
    }
    return capture;
}

}  // namespace gpuspy::collect
