// collector/ingest/ingest.h: one stream's bytes (a socket connection, a file the shim wrote, a section of a
// capture) turned into a Process of the model, validated record by record.
#pragma once

#include "collector/model/model.h"
#include "wire/codec.h"

#include <functional>
#include <string>
#include <vector>

namespace gpuspy::collect {

// Applies one validated record to the process it belongs to: definitions into the maps, events into
// the vectors (unless !keepEvents: then only the latest time is noted), Symbol records into symbols.
// Records of types this build does not use are ignored.
void applyRecord(Process& proc, const wire::RecordView& record, bool keepEvents = true);

// The parts of a Symbol record's tail: function '\0' file '\0' [module '\0' [callee '\0']] (the module
// only when the record's moduleIndex names none of the process's modules, else empty where a callee
// follows; the callee: Frame::callee).
struct SymbolText {
    std::string_view function, file, module, callee;
};
SymbolText splitSymbolTail(std::string_view tail);

// Joins a Process record's command line (arguments separated by '\0') with spaces.
std::string joinCommandLine(std::string_view argv0Nul);

// Incremental ingest of one stream. Feed bytes in any split; everything before the first malformed
// byte is kept. The validated bytes are kept too (header and whole records, never a partial one) so
// the stream can be stored as it came and replayed: drain them with takeValidated().
class StreamIngest {
public:
    using Observer = std::function<void(const Process&, const wire::RecordView&)>;

    StreamIngest() = default;
    // Called after each record has been applied (the dump command prints from here).
    void setObserver(Observer observer) { m_observer = std::move(observer); }
    // Whether to keep the validated bytes for takeValidated() (on by default; readers turn it off).
    void setKeepRaw(bool keep) { m_keepRaw = keep; }
    // Whether to keep the events (Call, GpuSpan, Nvtx records) in the Process (on by default). Off, the
    // Process holds only definitions, totals and lastNs, and memory does not grow with the records:
    // a streaming reader takes the events from the observer instead.
    void setKeepEvents(bool keep) { m_keepEvents = keep; }
    // With events kept: the calls left to keep, shared by the streams of one reader. A call that finds it
    // at 0 makes this process drop what it kept and keep no more (Process::eventsDropped).
    void setEventBudget(uint64_t* remaining) { m_budget = remaining; }
    // With a budget: a process that finds it at 0 keeps a window of its latest calls instead of nothing
    // (Process::windowed): as many as it held then (at least kMinWindowCalls, else it drops them), trimmed
    // by the older half whenever it is full, so it never holds more than it did. Every call is counted
    // by stack (Process::callsByStack) from the first.
    void setWindowPastBudget(bool window) { m_windowPastBudget = window; }
    static constexpr size_t kMinWindowCalls = 8;
    // Adds deltaNs to every host time of the stream (wire::shiftRecordTimes) before it reaches the
    // Process and the observer: a capture put on another's clock (several captures read as one run).
    // The validated bytes (takeValidated) stay as they came.
    void setTimeShift(int64_t deltaNs) { m_shiftNs = deltaNs; }

    // Returns false once the stream is bad (then error() says why); later input is ignored.
    bool feed(const void* data, size_t n);
    // End of input: a partial record left over is an error (truncated). Returns !failed().
    bool finish();

    bool failed() const { return !m_process.streamError.empty(); }
    const std::string& error() const { return m_process.streamError; }
    // Marks the stream as damaged from outside (a capture chunk that could not be read, ...).
    void fail(const std::string& message);

    // The bytes fed from now on are a new stream of the same process: its shim lost the first one (the
    // app closed or took over its socket, close_range) and connected again. A record the lost connection
    // cut is dropped (the shim counted what it could not send); the Process, its definitions and events
    // go on. Returns how many modules the process had announced before (the new stream announces its
    // own again, after them: its Symbol records' module indexes count from there).
    uint32_t resume();
    bool resumed() const { return m_resumed; }

    bool hasHeader() const { return m_headerApplied || m_decoder.hasHeader(); }
    const wire::StreamHeader& header() const { return m_decoder.header(); }
    uint64_t bytesReceived() const { return m_received; }
    uint64_t validBytes() const { return m_decoder.offset(); }  // stream offset up to which all is valid
    uint64_t records() const { return m_decoder.records(); }
    uint64_t calls() const { return m_calls; }  // Call records, kept or not
    uint64_t unknownRecords() const { return m_decoder.unknownRecords(); }

    Process& process() { return m_process; }
    const Process& process() const { return m_process; }

    // Validated bytes not yet taken, from stream offset takenBytes().
    size_t pendingValidated() const;
    uint64_t takenBytes() const { return m_rawBase; }
    // Appends the validated bytes not yet taken to `out` and forgets them.
    void takeValidated(std::vector<uint8_t>& out);

private:
    void onRecord(const wire::RecordView& record);
    void applyHeader();
    void dropUnvalidated();

    wire::StreamDecoder m_decoder;
    Process m_process;
    Observer m_observer;
    bool m_keepRaw = true;
    bool m_keepEvents = true;
    uint64_t* m_budget = nullptr;
    bool m_windowPastBudget = false;
    size_t m_windowCap = 0;  // > 0: keeping a window of at most this many calls
    void trimWindow();
    int64_t m_shiftNs = 0;
    std::vector<uint8_t> m_shifted;  // a record's body with its times shifted (m_shiftNs != 0)
    bool m_headerApplied = false;
    bool m_resumed = false;
    uint64_t m_received = 0;
    uint64_t m_calls = 0;
    // Bytes received but not yet taken; m_raw[0] is stream offset m_rawBase. Only the prefix up to
    // the decoder's offset is validated; the rest is a record still arriving (<= one record).
    std::vector<uint8_t> m_raw;
    uint64_t m_rawBase = 0;
};

// A whole stream in one buffer, for tests and small files.
Process ingestStream(const void* data, size_t n);

}  // namespace gpuspy::collect
