// shim/drain.cpp: the one drain thread that empties every thread's lane (lanes.cpp), turns the items
// into wire records and writes them to the collector's socket or, with no collector, to a capture file
// (the collector's compressed layout, capped by GPUSPY_MAX_BYTES).
// Over 600 lines (about 1,000): the output (socket or file, its recovery when the app takes the number)
// and the passes share the Output and Work state with the exit's takeover (the driver gate); the next
// split is the output into a file of its own behind a small interface (open, write, recover, close).
#include "shim/shim.h"
#ifdef GPUSPY_HAVE_STACK
#include "shim/python.h"
#endif

#include "wire/capture_format.h"
#include "wire/codec.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {

uint64_t recordsMade();
uint64_t recordsDropped();
void countDrainDrop(uint64_t n);
void countMade(uint64_t n);
size_t snapshotThreadStats(wire::ThreadStatsBody* out, size_t cap);

namespace {

constexpr size_t kBufSize = 1 << 20;
// Items taken from one lane per pass: a lane that is always full cannot hold the others back.
constexpr size_t kLaneQuota = 256;
// Items encoded at a time (several lanes' worth): definitions are sent and GPU spans resolved per batch.
constexpr size_t kBatch = 2048;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_running{false};
// How the stream ends: fast (a signal, _exit, exec: no waiting for pending GPU spans) and why.
std::atomic<bool> g_fast{false};
std::atomic<int> g_exitReason{0};
// Flush requests (a signal handler chaining to the app's own): the drain thread acknowledges the
// request it saw before a pass that found every lane empty and wrote everything out.
std::atomic<uint64_t> g_flushReq{0};
std::atomic<uint64_t> g_flushAck{0};
thread_local bool t_drainThread GS_TLS = false;
std::atomic<bool> g_finished{false};
// A stop's limits (drainStopAndFlush; 0: no stop under way). Past the first, the drain thread takes
// no more records from the lanes (what is left is counted as dropped) and ends the stream; a socket that
// does not take what it sends is waited for until the second, a little before the stop gives up waiting.
std::atomic<uint64_t> g_stopTakeUntilNs{0};
std::atomic<uint64_t> g_stopWriteUntilNs{0};

bool past(const std::atomic<uint64_t>& limit)
{
    const uint64_t d = limit.load(std::memory_order_acquire);
    return d != 0 && nowNs() >= d;
}
bool pastStopDeadline() { return past(g_stopTakeUntilNs); }

// The driver gate (drainDriverEnter/Leave). A thread that ends the process from inside a hooked call
// (a signal handler calling exit in the middle of cuLaunchKernel) may hold the driver's locks until the
// process is gone: a drain thread blocked on them would hold the exit for the whole flush limit and
// never write End. So the exit closes the gate (no driver call from then on: pending GPU spans stay
// unresolved), and a drain thread already inside a driver call that does not come back out promptly
// has its work taken over by the exiting thread, which writes the rest of the stream from buffers of
// its own; the drain thread, should it ever return, parks for good without touching anything.
enum Gate : int { kGateOpen = 0, kGateInDriver = 1, kGateClosed = 2, kGateTakenOver = 3 };
std::atomic<int> g_gate{kGateOpen};
constexpr uint64_t kGateGraceNs = 20000000;  // how long an exit waits for a driver call to come back

// The drain thread's rest between passes that found every lane empty: a futex wait of at most the poll
// period on g_wakeSeq, which drainWake bumps (a lane crossing half full, a stop or flush request).
// g_drainWaiting spares the wake's syscall while the drain thread is busy: the waker bumps the word,
// then reads the flag; the drain thread sets the flag, then the kernel compares the word; both in one
// total order (seq_cst), so either the waker sees the flag or the wait sees the new word and returns.
constexpr long kPollNs = 2000000;
std::atomic<uint32_t> g_wakeSeq{0};
std::atomic<bool> g_drainWaiting{false};
static_assert(sizeof(g_wakeSeq) == sizeof(int), "a futex word is 32 bits");

// Waits for a wake or kPollNs; `seen` is g_wakeSeq as read before the pass that found nothing, so that
// a wake during that pass ends the wait at once.
void waitForWork(uint32_t seen)
{
    g_drainWaiting.store(true, std::memory_order_seq_cst);
    timespec ts{0, kPollNs};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wakeSeq), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0);
    g_drainWaiting.store(false, std::memory_order_relaxed);
}

// The stream's destination. Its descriptor is the shim's own (fds.cpp): above the floor, checked by
// identity before every write batch; a number the app took over is never written to or closed.
struct Output {
    OwnedFd own;
    bool socket = false;
    bool failed = false;
    bool warned = false;
    bool saidTakenOver = false;
    bool saidCapped = false;
    char path[4096] = {};   // the capture file (reopened when the app took its number)
    uint64_t written = 0;   // bytes written into that file
    bool chunked = false;   // a capture file in the collector's layout: every write is a zstd chunk
};
Output g_out;
// GPUSPY_TEST_CLOCK_OFFSET_NS, for tests only: added to every CLOCK_MONOTONIC time the stream carries
// (not to the realtime stamp of the Identity pair), so that a test can make captures whose clocks
// disagree by a known amount and check that `gpuspy report A B` puts them back on one clock.
int64_t g_testOffsetNs = 0;
uint64_t g_maxBytes = 0;  // GPUSPY_MAX_BYTES: a capture file's size cap (0: none)
constexpr uint64_t kDefaultMaxBytes = 1ull << 30;
// Kept beyond the cap for the stream's last records (ThreadStats and End), so that a capped capture
// still says how many records it made and dropped.
constexpr uint64_t kEndReserve = 64 << 10;

void note(const char* msg)
{
    // Said once, outside the hot path; never allocates.
    ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}

size_t expandPath(char* out, size_t cap, const char* pattern, int pid)
{
    size_t n = 0;
    for (const char* p = pattern; *p && n + 24 < cap; ++p) {
        if (p[0] == '%' && p[1] == 'p') {
            n += size_t(snprintf(out + n, cap - n, "%d", pid));
            ++p;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = 0;
    return n;
}

// GPUSPY_MAX_BYTES: bytes, or with a K, M or G suffix; 0 for no cap.
uint64_t parseBytes(const char* s)
{
    if (!s || !*s) return kDefaultMaxBytes;
    char* end = nullptr;
    uint64_t v = strtoull(s, &end, 10);
    if (end == s) return kDefaultMaxBytes;
    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    default: break;
    }
    return v;
}

int createAt(char* path, size_t cap, int pid)
{
    int fd = fdTakeSpareFile(path);  // made at load (fds.cpp): no number under a limit the app lowered since
    if (fd >= 0) return fd;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        struct stat st{};
        if (lstat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
            // A device or a pipe the user named (/dev/null, a FIFO a reader waits on): written, not created.
            fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        } else {
            // A forked or exec'd child inheriting the same GPUSPY_OUTPUT: its own file, never the parent's.
            const size_t len = strlen(path);
            snprintf(path + len, cap - len, ".%d", pid);
            fd = fdTakeSpareFile(path);
            if (fd < 0) fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        }
    }
    return fd;
}

// Creates the capture file, its name in g_out.path. GPUSPY_OUTPUT (made absolute when the library
// loaded) is where the user asked: if it cannot be created, recording is off. The default,
// gpuspy-PID.gspy in the directory the process started in, falls back to $TMPDIR or /tmp (a daemon
// that dropped privileges, a read-only working directory); either way stderr says so, once.
int openCaptureFile()
{
    const int pid = int(getpid());
    char* path = g_out.path;
    const size_t cap = sizeof g_out.path;
    const char* env = setting("GPUSPY_OUTPUT");
    const bool named = env && *env;
    if (named) {
        expandPath(path, cap - 32, env, pid);
    } else {
        const char* dir = loadDirectory();
        snprintf(path, cap - 32, "%s/gpuspy-%d.gspy", dir ? dir : ".", pid);
    }
    int fd = createAt(path, cap, pid);
    if (fd >= 0) return fd;
    const int err = errno;
    char msg[9000];
    if (!named) {
        char first[4096];
        memcpy(first, path, sizeof first);
        const char* tmp = getenv("TMPDIR");
        snprintf(path, cap - 32, "%s/gpuspy-%d.gspy", tmp && tmp[0] == '/' ? tmp : "/tmp", pid);
        fd = createAt(path, cap, pid);
        if (fd >= 0) {
            snprintf(msg, sizeof msg, "gpuspy: cannot create %s (%s); writing %s instead\n", first, strerror(err), path);
            note(msg);
            return fd;
        }
        snprintf(msg, sizeof msg, "gpuspy: cannot create %s (%s) nor %s (%s); recording is off\n", first,
                 strerror(err), path, strerror(errno));
    } else {
        snprintf(msg, sizeof msg, "gpuspy: cannot create %s (%s); recording is off\n", path, strerror(err));
    }
    note(msg);
    path[0] = 0;
    return -1;
}

int connectSocket(const char* path)
{
    int fd = fdTakeSpareSocket();  // made at load (fds.cpp): no number under a limit the app lowered since
    if (fd < 0) fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) {
        close(fd);
        return -1;
    }
    strcpy(addr.sun_path, path);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

enum class Write { Ok, Failed, WouldBlock };

// A socket is written without blocking: while a collector does not read, the drain thread waits in
// poll, a short while at a time, and a stop gives up there once its limit is near (WouldBlock: the
// caller counts what was not sent).
Write writeRaw(const uint8_t* p, size_t n)
{
    while (n > 0) {
        ssize_t w = g_out.socket ? send(g_out.own.fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : write(g_out.own.fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && g_out.socket && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            // A collector behind: waited for, within a stop's limit (a fast stop's too: giving up at
            // the first full buffer lost the End of every burst that outran the collector).
            if (past(g_stopWriteUntilNs)) return Write::WouldBlock;
            pollfd pfd{g_out.own.fd, POLLOUT, 0};
            poll(&pfd, 1, 5);
            continue;
        }
        if (w <= 0) return Write::Failed;
        p += w;
        n -= size_t(w);
        if (!g_out.socket) g_out.written += uint64_t(w);
    }
    return Write::Ok;
}

// zstd, loaded privately (RTLD_LOCAL, like libunwind: its symbols must not interpose on an app's own
// zstd), for a capture file the shim writes alone: ~8-20 bytes a call against ~100 bare.
struct Zstd {
    void* (*createCCtx)();
    size_t (*setParameter)(void*, int, int);
    size_t (*compress2)(void*, void*, size_t, const void*, size_t);
    size_t (*compressBound)(size_t);
    unsigned (*isError)(size_t);
    void* cctx;
    uint8_t* out;
    size_t outCap;
};
Zstd g_zstd{};
bool g_zstdTried = false;

bool zstdReady()
{
    if (g_zstdTried) return g_zstd.cctx != nullptr;
    g_zstdTried = true;
    void* lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    g_zstd.createCCtx = reinterpret_cast<void* (*)()>(dlsym(lib, "ZSTD_createCCtx"));
    g_zstd.setParameter = reinterpret_cast<size_t (*)(void*, int, int)>(dlsym(lib, "ZSTD_CCtx_setParameter"));
    g_zstd.compress2 = reinterpret_cast<size_t (*)(void*, void*, size_t, const void*, size_t)>(dlsym(lib, "ZSTD_compress2"));
    g_zstd.compressBound = reinterpret_cast<size_t (*)(size_t)>(dlsym(lib, "ZSTD_compressBound"));
    g_zstd.isError = reinterpret_cast<unsigned (*)(size_t)>(dlsym(lib, "ZSTD_isError"));
    if (!g_zstd.createCCtx || !g_zstd.setParameter || !g_zstd.compress2 || !g_zstd.compressBound || !g_zstd.isError)
        return false;
    g_zstd.outCap = g_zstd.compressBound(kBufSize);
    g_zstd.out = static_cast<uint8_t*>(malloc(g_zstd.outCap));
    void* cctx = g_zstd.out ? g_zstd.createCCtx() : nullptr;
    if (!cctx) return false;
    constexpr int kLevel = 100, kChecksum = 201;  // ZSTD_c_compressionLevel, ZSTD_c_checksumFlag
    g_zstd.setParameter(cctx, kLevel, 1);
    g_zstd.setParameter(cctx, kChecksum, 1);
    g_zstd.cctx = cctx;
    return true;
}

// A capture file just created: in the collector's layout when zstd is at hand (its header first),
// else the bare stream. False: the header could not be written.
bool beginCaptureFile()
{
    g_out.chunked = false;
    g_out.written = 0;
    if (!zstdReady()) return true;
    wire::CaptureFileHeader h{};
    memcpy(h.magic, wire::kCaptureMagic, sizeof h.magic);
    h.versionMajor = wire::kCaptureFileMajor;
    h.versionMinor = wire::kCaptureFileMinor;
    h.headerSize = sizeof h;
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h.createdRealtimeNs = uint64_t(rt.tv_sec) * 1000000000u + uint64_t(rt.tv_nsec);
    if (writeRaw(reinterpret_cast<const uint8_t*>(&h), sizeof h) != Write::Ok) return false;
    g_out.chunked = true;
    return true;
}

Write writeChunk(uint16_t kind, const uint8_t* p, size_t n, bool compress)
{
    size_t stored = n;
    const uint8_t* body = p;
    if (compress) {
        const size_t z = g_zstd.compress2(g_zstd.cctx, g_zstd.out, g_zstd.outCap, p, n);
        if (g_zstd.isError(z)) return Write::Failed;
        stored = z;
        body = g_zstd.out;
    }
    wire::CaptureChunkHeader h{wire::kCaptureChunkMagic, kind, uint16_t(compress ? 1 : 0), 0, uint32_t(n), uint32_t(stored), 0};
    // Header and body in one system call: an app that closes or takes the number between two writes
    // left a header without its body, and the chunk written again after it made the file unreadable
    // from there ("corrupt chunk (Unknown frame descriptor)": hardening.guest.fd_closefrom under load).
    iovec iov[2] = {{&h, sizeof h}, {const_cast<uint8_t*>(body), stored}};
    int first = 0;
    while (first < 2) {
        const ssize_t w = writev(g_out.own.fd, iov + first, 2 - first);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return Write::Failed;
        g_out.written += uint64_t(w);
        // Partly written (a full disk, a file size limit): go on from where it stopped.
        size_t left = size_t(w);
        while (first < 2 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
        if (first < 2 && left > 0) {
            iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
            iov[first].iov_len -= left;
        }
    }
    return Write::Ok;
}

// The stream's next bytes: to the socket or a bare stream file as they are, into a capture file as
// compressed chunks (each at most kBufSize, within the reader's kCaptureMaxChunkRaw).
Write writeAll(const uint8_t* p, size_t n)
{
    if (!g_out.chunked) return writeRaw(p, n);
    static_assert(kBufSize <= wire::kCaptureMaxChunkRaw);
    while (n > 0) {
        const size_t k = n < kBufSize ? n : kBufSize;
        const Write w = writeChunk(wire::kChunkStream, p, k, true);
        if (w != Write::Ok) return w;
        p += k;
        n -= k;
    }
    return Write::Ok;
}

// The capture file's last chunk: a reader knows it was finished.
void endCaptureFile()
{
    if (!g_out.chunked || g_out.failed || !fdStillOurs(g_out.own)) return;
    const wire::CaptureFileEnd end{0, 1, 0};
    writeChunk(wire::kChunkEnd, reinterpret_cast<const uint8_t*>(&end), sizeof end, false);
}

size_t encodePreamble(uint8_t* out, size_t cap)
{
    size_t n = 0;
    // The start is when recording began, not now: records were queued before this thread ran.
    uint64_t mono = 0, real = 0;
    startTimes(&mono, &real);
    wire::StreamHeader h = wire::makeStreamHeader(uint32_t(getpid()), mono, real);
    memcpy(out, &h, sizeof h);
    n += sizeof h;

    char cmd[4096];
    size_t cmdLen = 0;
    OwnedFd fd = fdOwn(open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
    if (fd.fd >= 0) {
        ssize_t r = read(fd.fd, cmd, sizeof cmd);
        if (r > 0) cmdLen = size_t(r);
        fdRelease(fd);
    }
    wire::ProcessBody pb{};
    pb.pid = uint32_t(getpid());
    pb.ppid = uint32_t(getppid());
    pb.startMonotonicNs = mono;
    pb.startRealtimeNs = real;
    pb.length = uint32_t(cmdLen);
    n += wire::encodeVar(out + n, cap - n, pb, cmd, uint32_t(cmdLen));
    // Who it is (launcher rank, host) and a wall-clock pair, which puts this capture on the clock of
    // the others of its run (gpuspy report A B ...).
    n += encodeIdentity(out + n, cap - n, wire::IdentityEdge::Start);

    // Attached to a running process: the stream starts at the attach (the Process record's start), and
    // what was made before it is unknown; kernel names are asked of the driver when first launched.
    if (attachedAt(nullptr)) {
        static const char kText[] =
            "attached to a running process (gpuspy attach): the capture starts at the attach; allocations, "
            "modules, streams and pinned host ranges made before it are unknown (their memory kinds are asked "
            "of the driver, else shown as unknown)";
        wire::NoticeBody nb{};
        nb.code = wire::kNoticeAttached;
        nb.length = uint32_t(sizeof kText - 1);
        n += wire::encodeVar(out + n, cap - n, nb, kText, nb.length);
    }

    for (size_t i = 1; i < kApiCount; ++i) {
        wire::ApiDefBody ab{};
        ab.apiId = uint16_t(i);
        ab.category = kApis[i].category;
        ab.length = uint32_t(strlen(kApis[i].abi));
        n += wire::encodeVar(out + n, cap - n, ab, kApis[i].abi, ab.length);
    }
    if (g_testOffsetNs) {
        wire::StreamHeader* sh = reinterpret_cast<wire::StreamHeader*>(out);
        wire::shiftHeaderTime(*sh, g_testOffsetNs);
        wire::shiftStreamTimes(out + sizeof(wire::StreamHeader), n - sizeof(wire::StreamHeader), g_testOffsetNs);
    }
    return n;
}

size_t drainDefs(uint8_t* out, size_t cap)
{
    size_t n = 0;
    for (;;) {
        size_t k = drainKernelDefs(out + n, cap - n);
        k += drainStringDefs(out + n + k, cap - n - k);
        k += drainDeviceDefs(out + n + k, cap - n - k);
        k += drainThreadDefs(out + n + k, cap - n - k);
#ifdef GPUSPY_HAVE_STACK
        k += stackDrainDefs(out + n + k, cap - n - k);
#endif
        n += k;
        if (k == 0 || cap - n < 70000) break;
    }
    return n;
}

void noteWriteFailure(int err)
{
    if (g_out.warned) return;
    g_out.warned = true;
    char msg[300];
    snprintf(msg, sizeof msg, "gpuspy: writing the capture failed (%s); recording is off\n", strerror(err));
    note(msg);
}

// Writes the stream's preamble and every definition made so far (a new stream: all are pending
// again), so that records encoded for an earlier stream can follow. `scratch` is kBufSize bytes.
bool startStream(uint8_t* scratch)
{
    if (writeAll(scratch, encodePreamble(scratch, kBufSize)) != Write::Ok) return false;
    for (;;) {
        const size_t n = drainDefs(scratch, kBufSize);
        if (n == 0) return true;
        if (writeAll(scratch, n) != Write::Ok) return false;
    }
}

bool recoverTakenOver(uint8_t* scratch, bool unstarted);

// Opens the socket or the file and writes the stream's preamble. False: nothing can be written.
bool openOutput(uint8_t* scratch)
{
    g_out = Output{};
    g_maxBytes = parseBytes(setting("GPUSPY_MAX_BYTES"));
    const char* offset = setting("GPUSPY_TEST_CLOCK_OFFSET_NS");
    g_testOffsetNs = offset ? strtoll(offset, nullptr, 10) : 0;
    const char* sock = setting("GPUSPY_SOCKET");
    if (sock && *sock) {
        int fd = connectSocket(sock);
        if (fd >= 0) {
            g_out.own = fdOwn(fd);
            g_out.socket = true;
        } else {
            const int err = errno;
            char msg[800];
            unsigned before = 0;
            if ((err == EACCES || err == EPERM) && userChangedSinceLoad(&before))
                // The collector's socket lives in a directory only its user may enter: a server that
                // dropped privileges before its first CUDA call is refused, whatever the collector does.
                snprintf(msg, sizeof msg,
                         "gpuspy: this process changed its user (uid %u when gpuspy loaded, %u now) before its "
                         "first CUDA call, and the collector at %s refuses it (%s): run gpuspy as uid %u, or let "
                         "the process write its own capture (unset GPUSPY_SOCKET); writing a capture file instead\n",
                         before, unsigned(geteuid()), sock, strerror(err), unsigned(geteuid()));
            else
                snprintf(msg, sizeof msg, "gpuspy: no collector at %s (%s); writing a capture file instead\n", sock,
                         strerror(err));
            note(msg);
        }
    }
    if (g_out.own.fd < 0) g_out.own = fdOwn(openCaptureFile());
    if (g_out.own.fd < 0) {
        g_out.failed = true;
        g_out.warned = true;  // openCaptureFile said why
        return false;
    }
    if ((!g_out.socket && !beginCaptureFile()) || writeAll(scratch, encodePreamble(scratch, kBufSize)) != Write::Ok) {
        // The app took the number between our open and this write: open again, elsewhere if need be.
        if (!fdStillOurs(g_out.own)) {
            if (recoverTakenOver(scratch, true)) return true;
            g_out.failed = true;
            return false;
        }
        noteWriteFailure(errno);
        g_out.failed = true;
        return false;
    }
    return true;
}

// A new stream into a new destination (preamble and every definition again), so that records encoded
// for the earlier stream can follow. False: nothing can be written (said once).
bool startNewStream(uint8_t* scratch)
{
    internForgetSent();
#ifdef GPUSPY_HAVE_STACK
    stackAfterForkChild();
#endif
    if (startStream(scratch)) return true;
    noteWriteFailure(errno);
    return false;
}

// The app now owns our descriptor's number (it dup2'd onto it, or closed it and opened something
// that got the number). Never written to nor closed: the same file is opened again and the stream
// goes on where it was; a collector is connected to again as a new stream (the first one was cut
// short by the app); a file that is gone is created anew. `unstarted`: the stream's preamble was not
// written yet (the number was taken before it). False: nothing can be written.
// (Between the identity check and the write the app may still take the number: a window of one
// system call, closed by the check before the next batch.)
bool recoverTakenOver(uint8_t* scratch, bool unstarted)
{
    const OwnedFd lost = g_out.own;
    g_out.own = OwnedFd{};
    if (!g_out.saidTakenOver) {
        g_out.saidTakenOver = true;
        char msg[200];
        // Closed (close_range, closefrom) or the number reused: say which. EBADF: nothing behind it now.
        const int savedErrno = errno;
        const bool closed = fcntl(lost.fd, F_GETFD) == -1 && errno == EBADF;
        errno = savedErrno;
        snprintf(msg, sizeof msg, "gpuspy: the app %s descriptor %d (gpuspy's output); opening it again\n",
                 closed ? "closed" : "took over", lost.fd);
        note(msg);
    }
    if (g_out.socket) {
        const char* sock = setting("GPUSPY_SOCKET");
        const int fd = sock && *sock ? connectSocket(sock) : -1;
        if (fd >= 0) {
            g_out.own = fdOwn(fd);
            return startNewStream(scratch);
        }
        note("gpuspy: lost the collector; writing the rest to a capture file\n");
        g_out.socket = false;
    } else if (g_out.path[0]) {
        const int fd = open(g_out.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            OwnedFd again = fdOwn(fd);
            if (again.dev == lost.dev && again.ino == lost.ino) {
                g_out.own = again;
                return unstarted ? startNewStream(scratch) : true;  // the same file: the stream goes on
            }
            fdRelease(again);
        }
    }
    g_out.own = fdOwn(openCaptureFile());
    if (g_out.own.fd < 0) {
        g_out.warned = true;  // openCaptureFile said why
        return false;
    }
    if (!beginCaptureFile()) {
        noteWriteFailure(errno);
        return false;
    }
    return startNewStream(scratch);
}

// A write failed. A socket falls back to a file, which starts a new stream (preamble and every
// definition again) and takes the batch that failed: true, write it again. A file gives up, said once.
bool onWriteFailure(uint8_t* scratch)
{
    const int err = errno;
    if (g_out.socket) {
        fdRelease(g_out.own);
        note("gpuspy: lost the collector; writing the rest to a capture file\n");
        g_out.socket = false;
        g_out.own = fdOwn(openCaptureFile());
        if (g_out.own.fd < 0) {
            g_out.warned = true;  // openCaptureFile said why
        } else if (!beginCaptureFile()) {
            noteWriteFailure(errno);
        } else if (startNewStream(scratch)) {
            return true;
        }
    } else {
        noteWriteFailure(err);
    }
    g_out.failed = true;
    return false;
}

// A capture file at its cap (GPUSPY_MAX_BYTES): what would go beyond it is counted, not written; the
// stream's last records may use kEndReserve beyond the cap.
bool overCap(size_t n, bool last)
{
    if (g_out.socket || g_maxBytes == 0) return false;
    const uint64_t limit = g_maxBytes + (last ? kEndReserve : 0);
    if (g_out.written + n <= limit) return false;
    if (!last && !g_out.saidCapped) {
        g_out.saidCapped = true;
        char msg[300];
        snprintf(msg, sizeof msg,
                 "gpuspy: the capture reached GPUSPY_MAX_BYTES (%llu bytes); further records are counted as "
                 "dropped, not written\n",
                 (unsigned long long)g_maxBytes);
        note(msg);
    }
    return true;
}

// Writes buf[0..n) holding `records` queued records; counts them as dropped when they cannot be
// written. `last`: the stream's final records.
void flushBuffer(uint8_t* buf, size_t& n, uint64_t records, uint8_t* scratch, bool last)
{
    if (n == 0) return;
    // Once per batch, not per call: is the number still ours? (The app may have taken it over.)
    if (!g_out.failed && !fdStillOurs(g_out.own) && !recoverTakenOver(scratch, false)) g_out.failed = true;
    unwindPipeCheck();
    if (g_out.failed || overCap(n, last)) {
        countDrainDrop(records);
        n = 0;
        return;
    }
    if (g_testOffsetNs) wire::shiftStreamTimes(buf, n, g_testOffsetNs);
    Write w = writeAll(buf, n);
    // Taken over during the write (a socket's send on the app's file fails): open again, write again.
    if (w == Write::Failed && !fdStillOurs(g_out.own)) {
        if (recoverTakenOver(scratch, false)) w = writeAll(buf, n);
        else g_out.failed = true;  // recoverTakenOver said why
    }
    if (w == Write::Failed && !g_out.failed && onWriteFailure(scratch)) {
        w = writeAll(buf, n);
        if (w == Write::Failed) onWriteFailure(scratch);
    }
    if (w == Write::WouldBlock) {
        // A quick stop and a collector that is not reading: what it did not take is counted, and
        // nothing more is sent (the stream may end inside a record; the collector keeps what came before).
        g_out.failed = true;
        g_out.warned = true;
    }
    if (w != Write::Ok) countDrainDrop(records);
    n = 0;
}

// Nothing can be written any more (openCaptureFile or noteWriteFailure said why, once): recording
// ends, and every later call passes straight through (Dead) instead of being recorded for nothing.
// True: the drain thread is done.
bool giveUpIfFailed()
{
    if (!g_out.failed) return false;
    int on = int(State::On);
    g_state.compare_exchange_strong(on, int(State::Dead));
    fdRelease(g_out.own);
    g_finished.store(true, std::memory_order_release);
    return true;
}

// What the drain thread encoded and has not written yet.
struct OutBuffer {
    uint8_t* buf = nullptr;      // kBufSize bytes
    uint8_t* scratch = nullptr;  // kBufSize bytes, for a new stream's preamble
    size_t n = 0;
    uint64_t records = 0;        // queued records in buf[0..n) (counted as dropped if it cannot be written)
    void flush(bool last = false)
    {
        flushBuffer(buf, n, records, scratch, last);
        records = 0;
    }
};

// The collector's words on our stream's socket (gpuspy ctl start/stop): read between passes, never
// waiting; the app's calls only ever see the switch they flip.
void readControl()
{
    if (!g_out.socket || g_out.own.fd < 0) return;
    uint8_t words[64];
    const ssize_t n = recv(g_out.own.fd, words, sizeof words, MSG_DONTWAIT);
    for (ssize_t i = 0; i < n; ++i) {
        if (words[i] == wire::kControlStart) windowOpen(wire::WindowTrigger::Control, nowNs(), 0);
        else if (words[i] == wire::kControlStop) windowClose(wire::WindowTrigger::Control, nowNs(), 0);
    }
}

// Window edges waiting (window.cpp); final: and the Tally. Made here, so counted here.
void encodeWindowRecords(OutBuffer& out, bool final)
{
    const size_t k = drainWindowRecords(out.buf + out.n, kBufSize - out.n, final);
    const uint64_t records = k / wire::encodedSize<wire::WindowBody>();
    out.n += k;
    out.records += records;
    if (records) countMade(records);
}

// The running totals (a Tally) once a second on a collector's socket, so that its live counters
// (`collect --metrics`, `top`) of gpuspy's own time and of calls left out while paused move while the
// process runs: ThreadStats come only when a thread or the stream ends, left-out counts only with a
// window's edges. A capture file gets none: it is read after the end, from those final records.
constexpr uint64_t kTallyPeriodNs = 1000000000ull;
uint64_t g_nextTallyNs = 0;

void encodeTally(OutBuffer& out, uint64_t now)
{
    if (!g_out.socket || now < g_nextTallyNs || kBufSize - out.n < 4096) return;
    g_nextTallyNs = now + kTallyPeriodNs;
    wire::TallyBody b{};
    b.timeNs = now;
    tallyTotals(b);
    b.window = windowState(b.leftOut);
    // Not counted as made (nor as dropped when it cannot be written), like the definitions: a state,
    // superseded by the next, that no analysis counts.
    out.n += wire::encode(out.buf + out.n, kBufSize - out.n, b);
}

// Encodes a batch of items taken from the lanes, with the definitions they may refer to, and the GPU
// spans resolved so far.
void encodeBatch(OutBuffer& out, const Item* items, size_t count, bool waitGpu)
{
    // Definitions first, so that the records that follow can refer to them: every definition an item
    // refers to was made before the item was queued, so before this. (Device names are asked of the
    // driver before anything is encoded: see the driver gate.)
    resolveDeviceNames();
    out.n += drainDefs(out.buf + out.n, kBufSize - out.n);
    encodeWindowRecords(out, false);
    for (size_t i = 0; i < count; ++i) {
        const Item& it = items[i];
        size_t k = 0;
        if (it.kind == Item::Call)
            k = wire::encode(out.buf + out.n, kBufSize - out.n, it.call);
        else if (it.kind == Item::Nvtx)
            k = wire::encode(out.buf + out.n, kBufSize - out.n, it.nvtx);
        else if (it.kind == Item::ThreadStats)
            k = wire::encode(out.buf + out.n, kBufSize - out.n, it.stats);
        else if (it.kind == Item::Collective)
            k = wire::encode(out.buf + out.n, kBufSize - out.n, it.collective);
        out.n += k;
        ++out.records;
        if (kBufSize - out.n < 4096) out.flush();
    }
    out.n += gpuDrain(out.buf + out.n, kBufSize - out.n, items, count, waitGpu);
    if (kBufSize - out.n < 200000) out.flush();
}

// One pass over every lane, live threads' or not (an exited thread's last records and its
// ThreadStats wait in the lane it left): at most kLaneQuota items from each. Returns how many.
size_t drainLanes(OutBuffer& out, Item* items, bool waitGpu)
{
    size_t total = 0, got = 0;
    for (Lane* lane = lanesFirst();; lane = laneNext(lane)) {
        if (lane) got += laneDequeue(lane, items + got, kLaneQuota);
        // Encoded a batch at a time, and at least once a pass: pending GPU spans are resolved each pass.
        if (!lane || kBatch - got < kLaneQuota) {
            encodeBatch(out, items, got, waitGpu);
            total += got;
            got = 0;
        }
        if (!lane) return total;
    }
}

// The stream has ended: what is still in a lane (a call under way at the end) will never be sent.
// Taken out, so that a stream started later (after an exec that failed) does not send it either.
uint64_t discardLanes(Item* items)
{
    uint64_t n = 0;
    for (Lane* lane = lanesFirst(); lane; lane = laneNext(lane))
        while (const size_t k = laneDequeue(lane, items, kBatch)) n += k;
    return n;
}

// A drain's working state: the drain thread's own, and a second set for an exit that takes its work
// over (the drain thread may still be writing into its own buffer past what it had encoded).
struct Work {
    OutBuffer out;
    Item* items = nullptr;
    bool allocate()
    {
        out.buf = static_cast<uint8_t*>(malloc(kBufSize));
        out.scratch = static_cast<uint8_t*>(malloc(kBufSize));
        items = static_cast<Item*>(malloc(sizeof(Item) * kBatch));
        return out.buf && out.scratch && items;
    }
};
Work g_work;
Work g_takeover;  // allocated with g_work (pages untouched until a takeover: no memory until then)

// Passes over the lanes until a stop finds them all empty, or its limit passes (what is left is
// counted as dropped when the stream ends). False: nothing can be written any more (given up).
bool drainPasses(Work& w, bool stopping, bool ownThread)
{
    for (;;) {
        if (giveUpIfFailed()) return false;  // the items still in the lanes are leaked, like at exit
        if (!stopping && g_stop.load(std::memory_order_acquire)) stopping = true;
#ifdef GPUSPY_HAVE_STACK
        if (ownThread) stackPrefault();
#endif
        const uint32_t wakeSeq = g_wakeSeq.load(std::memory_order_seq_cst);
        const uint64_t flushReq = g_flushReq.load(std::memory_order_acquire);
        const bool waitGpu = stopping && !g_fast.load(std::memory_order_acquire);
        if (!stopping) {
            readControl();
            const uint64_t now = nowNs();
            windowTick(now);
            encodeTally(w.out, now);
        }
        if (drainLanes(w.out, w.items, waitGpu) == 0 || (stopping && pastStopDeadline())) {
            w.out.flush();
            g_flushAck.store(flushReq, std::memory_order_release);
            // Stopping: no new call is recorded (Draining), every lane was found empty (or the stop's
            // limit came first).
            if (stopping) return true;
            waitForWork(wakeSeq);
        }
    }
}

// Final totals: per-thread figures for threads still alive, then End; the output closed.
void endStream(Work& w)
{
    OutBuffer& out = w.out;
    resolveDeviceNames();
    out.n += drainDefs(out.buf + out.n, kBufSize - out.n);
    const bool waitGpu = !g_fast.load(std::memory_order_acquire) && !pastStopDeadline();
    out.n += gpuDrain(out.buf + out.n, kBufSize - out.n, nullptr, 0, waitGpu);
    // Not in the made/dropped accounting, as GPU spans and clock points are not (it counts calls,
    // NVTX events and the stream's totals).
    uint64_t budgets = 0;
    out.n += gpuBudgetRecords(out.buf + out.n, kBufSize - out.n, &budgets);
    encodeWindowRecords(out, true);
    out.flush();  // before End is made: what this cannot write is in End's count
    wire::ThreadStatsBody stats[256];
    const size_t ns = snapshotThreadStats(stats, 256);
    for (size_t i = 0; i < ns && kBufSize - out.n > 64; ++i)
        out.n += wire::encode(out.buf + out.n, kBufSize - out.n, stats[i]);
#ifdef GPUSPY_HAVE_STACK
    if (const size_t k = kBufSize - out.n > 1024 ? pythonNotice(out.buf + out.n, kBufSize - out.n) : 0) {
        out.n += k;
        countMade(1);
        ++out.records;
    }
#endif
    // The second wall-clock pair: with the first, how far this host's clocks drifted apart over the run.
    if (kBufSize - out.n > 1024) out.n += encodeIdentity(out.buf + out.n, kBufSize - out.n, wire::IdentityEdge::End);
    // Like Identity, not counted among the records made (End's totals count calls, NVTX and ThreadStats).
    if (kBufSize - out.n > 1024) out.n += encodeCpuWait(out.buf + out.n, kBufSize - out.n);
    countMade(ns + 1);
    wire::EndBody end{};
    end.endNs = nowNs();
    end.recordsMade = recordsMade();
    countDrainDrop(discardLanes(w.items));
    end.recordsDropped = recordsDropped();
    end.gpuSpansSampledOut = gpuSampledOut();
    end.exitReason = g_exitReason.load(std::memory_order_acquire);
    out.n += wire::encode(out.buf + out.n, kBufSize - out.n, end);
    out.records += ns + 1;
    out.flush(true);
    endCaptureFile();
    if (g_out.socket && fdStillOurs(g_out.own)) shutdown(g_out.own.fd, SHUT_WR);
    fdRelease(g_out.own);
    g_finished.store(true, std::memory_order_release);
}

void* drainMain(void*)
{
    ++t_depth;  // nothing this thread calls is recorded
    t_drainThread = true;
    prctl(PR_SET_NAME, "gpuspy-drain", 0, 0, 0);
    // Fresh buffers each stream (the last ones leaked, as at exit: a drain thread parked after a
    // takeover may still hold them).
    g_work = Work{};
    g_takeover = Work{};
    g_nextTallyNs = 0;
    if (!g_work.allocate() || !g_takeover.allocate()) {
        g_finished.store(true);
        return nullptr;
    }
    openOutput(g_work.out.scratch);
    if (giveUpIfFailed()) return nullptr;
    if (!drainPasses(g_work, false, true)) return nullptr;
    endStream(g_work);
    return nullptr;  // buffers leaked on purpose: exit is near
}

// An exit from inside a hooked call found the drain thread inside a driver call that did not come
// back (it waits on a lock the exiting thread holds): the exiting thread ends the stream itself. What
// the drain thread had encoded goes out first, then the lanes from the second set of buffers.
void takeOverStream()
{
    ++t_depth;
    g_work.out.flush();
    if (drainPasses(g_takeover, true, false)) endStream(g_takeover);
    --t_depth;
}

pthread_t g_thread;

}  // namespace

bool startOwnThread(pthread_t* thread, void* (*main)(void*))
{
    // All signals blocked in gpuspy's threads: the app's handlers run on the app's threads.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const bool started = pthread_create(thread, &attr, main, nullptr) == 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return started;
}

void drainStart()
{
    if (g_running.exchange(true)) return;
    g_stop.store(false);
    g_finished.store(false);
    if (!startOwnThread(&g_thread, drainMain)) {
        g_running.store(false);
        g_finished.store(true);
    }
}

void drainWake()
{
    // Async-signal-safe, never blocks: an atomic add, and a syscall only while the drain thread waits.
    g_wakeSeq.fetch_add(1, std::memory_order_seq_cst);
    if (!g_drainWaiting.load(std::memory_order_seq_cst)) return;
    const int savedErrno = errno;
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wakeSeq), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    errno = savedErrno;
}

uint32_t drainWakeCount() { return g_wakeSeq.load(std::memory_order_relaxed); }

bool onDrainThread() { return t_drainThread; }

bool drainFlushNow(uint64_t timeoutNs)
{
    // Async-signal-safe: atomics, drainWake and nanosleep only.
    if (!g_running.load() || g_finished.load() || t_drainThread) return false;
    const uint64_t req = g_flushReq.fetch_add(1, std::memory_order_acq_rel) + 1;
    drainWake();
    const uint64_t deadline = nowNs() + timeoutNs;
    while (g_flushAck.load(std::memory_order_acquire) < req && !g_finished.load(std::memory_order_acquire)) {
        if (nowNs() > deadline) return false;
        timespec ts{0, 100000};
        nanosleep(&ts, nullptr);
    }
    return true;
}

void drainStopAndFlush(uint64_t timeoutNs, bool fast, int exitReason, bool mayHoldDriver)
{
    // Async-signal-safe too (a signal handler, _exit): atomics, drainWake and nanosleep only.
    if (!g_running.load() || t_drainThread) return;
    if (fast) g_fast.store(true, std::memory_order_release);
    g_exitReason.store(exitReason, std::memory_order_release);
    const uint64_t start = nowNs();
    const uint64_t deadline = start + timeoutNs;
    // The drain thread ends the stream a little before the limit, so that End is written within it.
    const uint64_t margin = timeoutNs / 4 < 100000000ull ? timeoutNs / 4 : 100000000ull;
    g_stopTakeUntilNs.store(deadline - margin, std::memory_order_release);
    g_stopWriteUntilNs.store(deadline - margin / 10, std::memory_order_release);
    g_stop.store(true, std::memory_order_release);
    drainWake();
    if (mayHoldDriver) {
        const uint64_t grace = start + kGateGraceNs;
        for (;;) {
            if (g_finished.load(std::memory_order_acquire)) return;
            int gate = g_gate.load(std::memory_order_acquire);
            if (gate == kGateOpen && g_gate.compare_exchange_strong(gate, kGateClosed)) break;
            if (gate == kGateClosed || gate == kGateTakenOver) break;
            if (gate == kGateInDriver && nowNs() >= grace) {
                if (g_gate.compare_exchange_strong(gate, kGateTakenOver)) {
                    takeOverStream();
                    return;
                }
                continue;
            }
            timespec ts{0, 100000};
            nanosleep(&ts, nullptr);
        }
    }
    while (!g_finished.load(std::memory_order_acquire) && nowNs() < deadline) {
        timespec ts{0, 500000};
        nanosleep(&ts, nullptr);
    }
}

bool drainGateClosed()
{
    const int gate = g_gate.load(std::memory_order_acquire);
    return gate == kGateClosed || gate == kGateTakenOver;
}

bool drainDriverEnter()
{
    int open = kGateOpen;
    return g_gate.compare_exchange_strong(open, kGateInDriver, std::memory_order_acq_rel);
}

void drainDriverLeave()
{
    int inside = kGateInDriver;
    if (g_gate.compare_exchange_strong(inside, kGateOpen, std::memory_order_acq_rel)) return;
    // Taken over: the stream is the exiting thread's now. Never touch it again.
    for (;;) {
        timespec ts{3600, 0};
        nanosleep(&ts, nullptr);
    }
}

void drainRestartable()
{
    if (!g_finished.load(std::memory_order_acquire)) return;  // still writing: never two drain threads
    g_running.store(false);
    g_stop.store(false);
    g_finished.store(false);
    g_fast.store(false);
    g_exitReason.store(0);
    g_stopTakeUntilNs.store(0);
    g_stopWriteUntilNs.store(0);
    // A drain thread parked after a takeover stays parked; the new one may call the driver.
    g_gate.store(kGateOpen);
    // A new stream (new file): every definition is pending again.
    internForgetSent();
#ifdef GPUSPY_HAVE_STACK
    stackAfterForkChild();
#endif
}

void drainAfterForkChild()
{
    // The drain thread did not survive the fork; its output belongs to the parent.
    g_running.store(false);
    g_stop.store(false);
    g_finished.store(false);
    g_drainWaiting.store(false);  // the parent's drain thread may have been waiting
    g_stopTakeUntilNs.store(0);
    g_stopWriteUntilNs.store(0);
    g_gate.store(kGateOpen);
    fdRelease(g_out.own);  // our copy only (when the child did not take its number); the parent's stream goes on
    g_out = Output{};
    internForgetSent();
}

}  // namespace gpuspy::shim
