// collector/live/server.h: the Unix-socket collector. Each connection is one process's stream, fed to its
// own ingest; a bad stream closes its connection only. One thread, one poll loop. With a capture
// writer, records go to the capture as they arrive and are not kept: memory holds the open processes'
// definitions (APIs, kernels, stacks, module maps), each connection's decode state and its write
// buffer (at most about flushBytes + one read), and the finished processes' stacks and module maps
// (symbolized at the end); it does not grow with the records.
#pragma once

#include "collector/ingest/capture_file.h"
#include "collector/ingest/ingest.h"
#include "collector/model/model.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpuspy::collect {

// A fresh private directory (mode 0700) under $XDG_RUNTIME_DIR when it is usable, else under /tmp;
// returns its path. Throws std::runtime_error on failure.
std::string makePrivateDir(const char* prefix = "gpuspy-");

// Told of every stream as it arrives (the flight recorder): called from poll(), on the server's thread.
class StreamListener {
public:
    virtual ~StreamListener() = default;
    virtual void onHeader(uint32_t stream, const wire::StreamHeader& header) = 0;
    virtual void onRecord(uint32_t stream, const wire::RecordView& record) = 0;  // after ingest applied it
    virtual void onFinished(uint32_t stream) = 0;
};

struct ServerOptions {
    // Where to listen. Empty: "socket" in a fresh private directory, removed with the server.
    std::string socketPath;
    // Validated stream bytes go here as they arrive; the processes then keep their definitions and
    // totals, not their Call, GpuSpan and Nvtx records (those are in the capture). Null: nothing is
    // written and the processes keep every record (tests; memory grows with the run).
    CaptureWriter* writer = nullptr;
    size_t flushBytes = 1u << 20;  // per connection: write to the capture when this much is pending
    size_t maxConnections = 4096;
    bool quiet = false;  // no messages on stderr (tests)
    // Told of every stream's records. With a listener and no writer the processes keep no records
    // either, and a finished one only its pid and command (the listener holds what it wants).
    StreamListener* listener = nullptr;
};

class Server {
public:
    explicit Server(ServerOptions options);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    const std::string& socketPath() const { return m_socketPath; }

    // Waits up to timeoutMs for connections, data or wake(), and handles what arrived.
    void poll(int timeoutMs);
    // Makes a poll() in progress return; async-signal-safe.
    void wake();
    // The fd a signal handler writes one byte to, to wake poll() (same as wake()).
    int wakeFd() const { return m_wake[1]; }

    // Takes the connection on `fd` (already connected, e.g. one end of a socketpair) as a client.
    void adopt(int fd);

    size_t openConnections() const { return m_conns.size(); }
    uint64_t acceptedConnections() const { return m_accepted; }
    uint64_t refusedConnections() const { return m_refused; }
    uint64_t badStreams() const { return m_bad; }
    // Call records received on every connection, open or closed.
    uint64_t callsReceived() const;
    // The pids of the processes connected now (their stream's header arrived).
    std::vector<uint32_t> connectedPids() const;
    // Sends `n` bytes to every connected process (the shim's control channel: wire::kControl*), never
    // waiting: a peer whose socket buffer is full misses them. Returns how many were sent to.
    size_t sendToClients(const void* data, size_t n);
    // CLOCK_MONOTONIC of the last connection opened or closed.
    uint64_t lastChangeNs() const { return m_lastChangeNs; }

    // Stops listening; reads what is already queued on the open connections and closes them.
    void closeAll();
    // The processes received so far (connections must be closed), in the order of the capture's
    // streams: process i is stream i of the writer. Moves them out. With a writer they hold what
    // symbolizing them after the run needs (pid, command, times, stacks, module map, how the stream
    // ended); their records and other definitions are in the capture.
    Capture takeCapture();

private:
    struct Conn {
        int fd = -1;
        uint32_t peerPid = 0;
        int stream = -1;  // index into m_streams once the stream header is valid
        StreamIngest ingest;
    };

    void acceptAll();
    bool readSome(Conn& c);  // false: the connection is finished (EOF, error or bad stream)
    bool ingest(Conn& c, const uint8_t* data, size_t n);
    void startStream(Conn& c);
    void finishConn(Conn& c, bool eof);
    void flush(Conn& c, bool all);
    void flushAll();
    void listen();

    ServerOptions m_opt;
    std::string m_dir;  // the private directory we made, or empty
    std::string m_socketPath;
    int m_listen = -1;
    int m_wake[2] = {-1, -1};
    std::vector<std::unique_ptr<Conn>> m_conns;
    std::vector<Process> m_processes;  // finished streams, by stream index (open ones hold a placeholder)
    uint32_t m_streams = 0;
    uint64_t m_accepted = 0, m_refused = 0, m_bad = 0;
    uint64_t m_closedCalls = 0;  // Call records of the connections already closed
    uint64_t m_lastChangeNs = 0, m_lastFlushNs = 0;
    uint64_t m_sinceFlushAll = 0;  // bytes received since every connection was last flushed
    std::vector<uint8_t> m_buf;  // one read buffer for all connections
    std::vector<uint8_t> m_out;
};

uint64_t monotonicNs();

}  // namespace gpuspy::collect
