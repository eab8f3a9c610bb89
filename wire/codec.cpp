// wire/codec.cpp: record encoding and the validating stream decoder.
#include "codec.h"

#include <cstdio>

namespace gpuspy::wire {

namespace {

struct TypeInfo {
    bool known;
    bool fixed;
    uint32_t headSize;
    uint64_t (*tail)(const uint8_t*);  // tail length stated by a variable head
};

template <class Body>
uint64_t tailOf(const uint8_t* p)
{
    Body b;
    std::memcpy(&b, p, sizeof b);
    return tailLength(b);
}

TypeInfo typeInfo(uint16_t type)
{
    switch (type) {
#define GS_RECORD(id, name, body, fixed) \
    case id: {                            \
        if constexpr (fixed)              \
            return {true, true, sizeof(body), nullptr}; \
        else                              \
            return {true, false, sizeof(body), &tailOf<body>}; \
    }
#include "records.def"
#undef GS_RECORD
    default:
        return {false, false, 0, nullptr};
    }
}

}  // namespace

StreamHeader makeStreamHeader(uint32_t pid, uint64_t startMonotonicNs, uint64_t startRealtimeNs)
{
    StreamHeader h{};
    std::memcpy(h.magic, kStreamMagic, sizeof h.magic);
    h.versionMajor = kVersionMajor;
    h.versionMinor = kVersionMinor;
    h.headerSize = sizeof(StreamHeader);
    h.pid = pid;
    h.startMonotonicNs = startMonotonicNs;
    h.startRealtimeNs = startRealtimeNs;
    return h;
}

size_t encodeRaw(uint8_t* out, size_t cap, RecordType type, const void* head, uint32_t headSize,
                 const void* tail, uint32_t tailSize)
{
    if (uint64_t(headSize) + tailSize > kMaxBody) return 0;
    const uint32_t body = pad8(headSize + tailSize);
    const size_t total = sizeof(RecordHeader) + body;
    if (total > cap) return 0;
    RecordHeader h{uint16_t(type), 0, body};
    std::memcpy(out, &h, sizeof h);
    std::memcpy(out + sizeof h, head, headSize);
    if (tailSize) std::memcpy(out + sizeof h + headSize, tail, tailSize);
    std::memset(out + sizeof h + headSize + tailSize, 0, body - headSize - tailSize);
    return total;
}

const char* decodeErrorName(DecodeError e)
{
    switch (e) {
    case DecodeError::None: return "no error";
    case DecodeError::BadMagic: return "not a gpuspy stream (bad magic)";
    case DecodeError::BadVersion: return "unsupported format version";
    case DecodeError::BadHeader: return "malformed stream header";
    case DecodeError::RecordTooLarge: return "record larger than the format allows";
    case DecodeError::BadRecordSize: return "record size does not match its type";
    case DecodeError::BadTail: return "record's stated length exceeds its body";
    case DecodeError::Truncated: return "truncated record at end of input";
    }
    return "unknown error";
}

std::string StreamDecoder::errorMessage() const
{
    if (m_error == DecodeError::None) return {};
    std::string s = decodeErrorName(m_error);
    if (!m_errorDetail.empty()) s += " (" + m_errorDetail + ")";
    s += " at offset " + std::to_string(m_errorOffset);
    return s;
}

bool StreamDecoder::fail(DecodeError e, uint64_t at, std::string detail)
{
    m_error = e;
    m_errorOffset = at;
    m_errorDetail = std::move(detail);
    m_carry.clear();
    m_carry.shrink_to_fit();
    return false;
}

bool StreamDecoder::checkHeader(const uint8_t* p, size_t n)
{
    if (n < sizeof(StreamHeader)) return fail(DecodeError::Truncated, 0, "stream header");
    StreamHeader h;
    std::memcpy(&h, p, sizeof h);
    if (std::memcmp(h.magic, kStreamMagic, sizeof h.magic) != 0) return fail(DecodeError::BadMagic, 0, {});
    if (h.versionMajor != kVersionMajor)
        return fail(DecodeError::BadVersion, 8,
                    "version " + std::to_string(h.versionMajor) + ", this build reads " + std::to_string(kVersionMajor));
    if (h.headerSize != sizeof(StreamHeader))
        return fail(DecodeError::BadHeader, 16, "header size " + std::to_string(h.headerSize));
    m_header = h;
    m_hasHeader = true;
    m_offset = sizeof(StreamHeader);
    return true;
}

size_t StreamDecoder::check(const uint8_t* p, size_t n)
{
    m_skip = false;
    if (n < sizeof(RecordHeader)) return 0;
    RecordHeader h;
    std::memcpy(&h, p, sizeof h);
    if (h.size > kMaxBody)
        return fail(DecodeError::RecordTooLarge, m_offset, "type " + std::to_string(h.type) + ", " + std::to_string(h.size) + " bytes"),
               SIZE_MAX;
    if (h.size % 8 != 0 || h.reserved != 0)
        return fail(DecodeError::BadRecordSize, m_offset, "type " + std::to_string(h.type)), SIZE_MAX;
    const TypeInfo ti = typeInfo(h.type);
    if (!ti.known) {
        if (h.type == 0) return fail(DecodeError::BadRecordSize, m_offset, "type 0"), SIZE_MAX;
        if (n < sizeof h + h.size) return 0;
        m_skip = true;  // a newer minor version's record: the caller skips it
        return sizeof h + h.size;
    }
    if (ti.fixed ? h.size != pad8(ti.headSize) : h.size < ti.headSize)
        return fail(DecodeError::BadRecordSize, m_offset,
                    std::string(recordName(RecordType(h.type))) + " of " + std::to_string(h.size) + " bytes"),
               SIZE_MAX;
    if (n < sizeof h + h.size) return 0;
    if (!ti.fixed) {
        const uint64_t tail = ti.tail(p + sizeof h);
        if (pad8(uint32_t(ti.headSize + (tail > kMaxBody ? kMaxBody : tail))) != h.size || tail > kMaxBody)
            return fail(DecodeError::BadTail, m_offset,
                        std::string(recordName(RecordType(h.type))) + " states " + std::to_string(tail) + " bytes"),
                   SIZE_MAX;
        if (RecordType(h.type) == RecordType::StackDef && tail / 8 > kMaxStackDepth)
            return fail(DecodeError::BadTail, m_offset, "stack deeper than " + std::to_string(kMaxStackDepth)), SIZE_MAX;
    }
    return sizeof h + h.size;
}

bool StreamDecoder::finish()
{
    if (m_error != DecodeError::None) return false;
    if (!m_hasHeader) return fail(DecodeError::Truncated, 0, m_carry.empty() ? "empty stream" : "stream header");
    if (!m_carry.empty()) return fail(DecodeError::Truncated, m_offset, std::to_string(m_carry.size()) + " bytes left");
    return true;
}

const char* recordName(RecordType t)
{
    switch (t) {
#define GS_RECORD(id, name, body, fixed) case RecordType::name: return #name;
#include "records.def"
#undef GS_RECORD
    }
    return "Unknown";
}

const char* directionName(Direction d)
{
    static const char* const k[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "Memset", "Prefetch"};
    return unsigned(d) < 8 ? k[unsigned(d)] : "Unknown";
}

const char* memKindName(MemKind m)
{
    static const char* const k[] = {"unknown", "pageable", "pinned", "managed", "device", "array"};
    return unsigned(m) < 6 ? k[unsigned(m)] : "unknown";
}

const char* categoryName(Category c)
{
    static const char* const k[] = {"other", "transfer", "launch", "alloc", "sync", "module", "graph", "query"};
    return unsigned(c) < 8 ? k[unsigned(c)] : "other";
}

const char* launcherName(Launcher l)
{
    switch (l) {
    case Launcher::Torch: return "torchrun";
    case Launcher::OpenMpi: return "openmpi";
    case Launcher::Pmi: return "pmi";
    case Launcher::Slurm: return "slurm";
    case Launcher::None: break;
    }
    return "";
}

}  // namespace gpuspy::wire
