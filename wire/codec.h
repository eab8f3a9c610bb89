// wire/codec.h: turning records into bytes and bytes back into validated records. No I/O, no
// allocation on the encode side (the shim's drain thread encodes into its own buffer).
#pragma once

#include "format.h"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace gpuspy::wire {

template <class Body> struct RecordOf;
#define GS_RECORD(id, name, body, fixed)                          \
    template <> struct RecordOf<body> {                           \
        static constexpr RecordType type = RecordType::name;      \
        static constexpr bool isFixed = fixed;                    \
    };
#include "records.def"
#undef GS_RECORD

constexpr uint32_t pad8(uint32_t n) { return (n + 7u) & ~7u; }

StreamHeader makeStreamHeader(uint32_t pid, uint64_t startMonotonicNs, uint64_t startRealtimeNs);

// Writes header + body (+ tail, zero-padded to 8). Returns the bytes written, or 0 when `cap` is too
// small or the body would exceed kMaxBody.
size_t encodeRaw(uint8_t* out, size_t cap, RecordType type, const void* head, uint32_t headSize,
                 const void* tail, uint32_t tailSize);

template <class Body>
size_t encode(uint8_t* out, size_t cap, const Body& body)
{
    static_assert(RecordOf<Body>::isFixed, "variable records need a tail: use encodeVar");
    return encodeRaw(out, cap, RecordOf<Body>::type, &body, sizeof(Body), nullptr, 0);
}

template <class Body>
size_t encodeVar(uint8_t* out, size_t cap, const Body& head, const void* tail, uint32_t tailSize)
{
    static_assert(!RecordOf<Body>::isFixed, "fixed records have no tail: use encode");
    return encodeRaw(out, cap, RecordOf<Body>::type, &head, sizeof(Body), tail, tailSize);
}

template <class Body>
constexpr size_t encodedSize(uint32_t tailSize = 0)
{
    return sizeof(RecordHeader) + pad8(uint32_t(sizeof(Body)) + tailSize);
}

// One decoded record. `body` points into the decoder's input or its small carry buffer and is valid
// only during the callback.
struct RecordView {
    RecordType type;
    const uint8_t* body;
    uint32_t size;
    uint64_t offset;  // of the record header, from the start of the stream

    template <class Body>
    Body as() const
    {
        Body b;
        std::memcpy(&b, body, sizeof b);
        return b;
    }
    // The tail of a variable record (already checked against the body size by the decoder).
    template <class Body>
    std::string_view tail() const
    {
        Body b = as<Body>();
        return {reinterpret_cast<const char*>(body) + sizeof(Body), size_t(tailLength(b))};
    }
};

enum class DecodeError { None, BadMagic, BadVersion, BadHeader, RecordTooLarge, BadRecordSize, BadTail, Truncated };
const char* decodeErrorName(DecodeError e);

// Incremental decoder for one stream: feed it bytes as they arrive (any split), it calls back once
// per complete, validated record. The first malformed byte stops it for good: everything before it
// has been delivered, and error()/errorOffset() say what and where.
class StreamDecoder {
public:
    template <class F>
    bool feed(const void* data, size_t n, F&& onRecord);
    // End of input: a partial record left over is a Truncated error.
    bool finish();

    bool hasHeader() const { return m_hasHeader; }
    const StreamHeader& header() const { return m_header; }
    uint64_t offset() const { return m_offset; }
    uint64_t records() const { return m_records; }
    uint64_t unknownRecords() const { return m_unknown; }
    DecodeError error() const { return m_error; }
    uint64_t errorOffset() const { return m_errorOffset; }
    std::string errorMessage() const;

private:
    // Validates a record at p (n bytes available). Returns its total size, 0 if more bytes are
    // needed, or SIZE_MAX after setting m_error.
    size_t check(const uint8_t* p, size_t n);
    bool checkHeader(const uint8_t* p, size_t n);
    bool fail(DecodeError e, uint64_t at, std::string detail);

    std::vector<uint8_t> m_carry;  // a partial record, at most sizeof(RecordHeader) + kMaxBody
    StreamHeader m_header{};
    bool m_hasHeader = false;
    uint64_t m_offset = 0;  // stream bytes fully consumed
    uint64_t m_records = 0;
    uint64_t m_unknown = 0;
    bool m_skip = false;  // set by check(): the record is of a type this build does not know
    DecodeError m_error = DecodeError::None;
    uint64_t m_errorOffset = 0;
    std::string m_errorDetail;
};

template <class F>
bool StreamDecoder::feed(const void* data, size_t n, F&& onRecord)
{
    if (m_error != DecodeError::None) return false;
    auto in = static_cast<const uint8_t*>(data);
    // The header first (carried over if split).
    while (!m_hasHeader && n > 0) {
        size_t want = sizeof(StreamHeader) - m_carry.size();
        size_t take = want < n ? want : n;
        m_carry.insert(m_carry.end(), in, in + take);
        in += take;
        n -= take;
        if (m_carry.size() < sizeof(StreamHeader)) return true;
        if (!checkHeader(m_carry.data(), m_carry.size())) return false;
        m_carry.clear();
    }
    // Finish a record carried over from the last call.
    while (!m_carry.empty() && n > 0) {
        size_t need = sizeof(RecordHeader);
        if (m_carry.size() >= sizeof(RecordHeader)) {
            RecordHeader h;
            std::memcpy(&h, m_carry.data(), sizeof h);
            need = sizeof h + h.size;
        }
        size_t take = need - m_carry.size() < n ? need - m_carry.size() : n;
        m_carry.insert(m_carry.end(), in, in + take);
        in += take;
        n -= take;
        size_t total = check(m_carry.data(), m_carry.size());
        if (total == SIZE_MAX) return false;
        if (total == 0) continue;
        RecordHeader h;
        std::memcpy(&h, m_carry.data(), sizeof h);
        RecordView v{RecordType(h.type), m_carry.data() + sizeof h, h.size, m_offset};
        m_offset += total;
        if (m_skip) ++m_unknown; else { ++m_records; onRecord(v); }
        m_carry.clear();
    }
    // Whole records straight from the input, no copy.
    while (n > 0) {
        size_t total = check(in, n);
        if (total == SIZE_MAX) return false;
        if (total == 0) {
            m_carry.assign(in, in + n);
            return true;
        }
        RecordHeader h;
        std::memcpy(&h, in, sizeof h);
        RecordView v{RecordType(h.type), in + sizeof h, h.size, m_offset};
        m_offset += total;
        if (m_skip) ++m_unknown; else { ++m_records; onRecord(v); }
        in += total;
        n -= total;
    }
    return true;
}

}  // namespace gpuspy::wire
