// The ground-truth trace: one JSON object per line, appended with a single write() so processes can share a file.
#include "sim.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <set>

namespace simcuda {
namespace {

std::atomic<int> g_fd{-2};  // -2: not opened yet, -1: disabled or failed

int traceFd()
{
    int fd = g_fd.load(std::memory_order_acquire);
    if (fd != -2) return fd;
    Lock g(bigLock());  // the model lock: fork() handles it, so a child never inherits it held
    fd = g_fd.load();
    if (fd != -2) return fd;
    std::string path = config().tracePath;
    if (path.empty()) {
        fd = -1;
    } else {
        for (size_t pos; (pos = path.find("%p")) != std::string::npos;) path.replace(pos, 2, std::to_string(processId()));
        fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) logLine("cannot open SIMCUDA_TRACE file %s", path.c_str());
    }
    g_fd.store(fd < 0 ? -1 : fd, std::memory_order_release);
    return g_fd.load();
}

// t0: when the caller began formatting the line; the whole line's cost feeds the submission estimate.
void emit(const char* buf, int len, Ns t0)
{
    const int fd = traceFd();
    if (fd < 0 || len <= 0) return;
    const int saved = errno;
    ssize_t n = write(fd, buf, static_cast<size_t>(len));
    (void)n;  // a full disk must not break the program under test
    noteTraceWrite(nowNs() - t0);
    errno = saved;
}

// Kernel names are mangled C++ (no quotes or backslashes in practice), but escape anyway.
std::string jsonEscape(const std::string& s)
{
    std::string o;
    o.reserve(s.size());
    for (char ch : s) {
        if (ch == '"' || ch == '\\') { o += '\\'; o += ch; }
        else if (static_cast<unsigned char>(ch) < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", ch); o += b; }
        else o += ch;
    }
    return o;
}

const char* opName(OpKind k)
{
    switch (k) {
    case OpKind::Kernel: return "kernel";
    case OpKind::Memcpy: return "memcpy";
    case OpKind::Memset: return "memset";
    case OpKind::HostFunc: return "host_func";
    case OpKind::MemOp: return "memop";
    case OpKind::EventRecord: return "event_record";
    case OpKind::EventWait: return "event_wait";
    }
    return "?";
}

const char* reasonName(WaitReason r)
{
    switch (r) {
    case WaitReason::CtxSync: return "ctx_sync";
    case WaitReason::StreamSync: return "stream_sync";
    case WaitReason::EventSync: return "event_sync";
    case WaitReason::SyncCopy: return "sync_copy";
    case WaitReason::PageableCopy: return "pageable_copy";
    case WaitReason::SyncMemset: return "sync_memset";
    case WaitReason::FreeSync: return "free_sync";
    case WaitReason::RegisterSync: return "register_sync";
    }
    return "?";
}

std::atomic<pid_t> g_pid{0};

}  // namespace

// Called in a forked child (handles.cpp): with '%p' in the path the child gets its own file; otherwise it keeps
// appending to the shared one. Either way its records carry its own pid.
void traceAfterFork()
{
    g_pid.store(0);
    if (config().tracePath.find("%p") == std::string::npos) return;
    const int fd = g_fd.load();
    if (fd >= 0) close(fd);
    g_fd.store(-2);
}

bool tracing() { return traceFd() >= 0; }

pid_t processId()
{
    pid_t pid = g_pid.load(std::memory_order_relaxed);
    if (!pid) {
        pid = getpid();
        g_pid.store(pid, std::memory_order_relaxed);
    }
    return pid;
}

pid_t threadId()
{
    // A forked child's thread keeps its parent thread's thread_locals: the fork generation tells them apart.
    static thread_local pid_t t_tid = 0;
    static thread_local unsigned t_gen = 0;
    const unsigned gen = forkGeneration();
    if (!t_tid || t_gen != gen) {
        t_gen = gen;
        t_tid = static_cast<pid_t>(syscall(SYS_gettid));
    }
    return t_tid;
}

namespace {

// With CUDA_VISIBLE_DEVICES set, a line's "dev" is the ordinal the process used (what a profiler in it sees) and
// "pdev" names the physical device behind it (its UUID's and PCI bus's SIMCUDA_DEVICES index).
std::string physicalKey(int dev)
{
    if (!config().visibleSet) return "";
    return ",\"pdev\":" + std::to_string(physicalDevice(dev));
}

}  // namespace

void traceOp(const Op& op, const char* api, int dev, unsigned long long ctxId, unsigned long long streamId, Ns submit,
             Ns start, Ns end, bool graph, pid_t tid)
{
    if (traceFd() < 0) return;
    const Ns t0 = nowNs();
    std::string line;
    char head[512];
    snprintf(head, sizeof head,
             "{\"type\":\"op\",\"op\":\"%s\",\"pid\":%d,\"tid\":%d,\"api\":\"%s\",\"dev\":%d,\"ctx\":%llu,\"stream\":%llu,"
             "\"submit\":%lld,\"start\":%lld,\"end\":%lld,\"graph\":%s",
             opName(op.kind), processId(), tid ? tid : threadId(), api, dev, ctxId, streamId, static_cast<long long>(submit),
             static_cast<long long>(start), static_cast<long long>(end), graph ? "true" : "false");
    line = head;
    char tail[256];
    switch (op.kind) {
    case OpKind::Kernel:
        line += ",\"name\":\"" + jsonEscape(op.name) + "\"";
        snprintf(tail, sizeof tail, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u", op.grid[0], op.grid[1],
                 op.grid[2], op.block[0], op.block[1], op.block[2], op.smem);
        line += tail;
        if (op.peerWait >= 0) {
            snprintf(tail, sizeof tail, ",\"peer_wait\":%lld", op.peerWait);
            line += tail;
        }
        break;
    case OpKind::Memcpy:
        snprintf(tail, sizeof tail, ",\"bytes\":%zu,\"dir\":\"%s\",\"host_mem\":\"%s\",\"sync\":%s", op.bytes, op.dir,
                 op.hostMem, op.sync ? "true" : "false");
        line += tail;
        break;
    case OpKind::Memset:
        snprintf(tail, sizeof tail, ",\"bytes\":%zu,\"sync\":%s", op.bytes, op.sync ? "true" : "false");
        line += tail;
        break;
    case OpKind::HostFunc:
    case OpKind::EventRecord:
    case OpKind::EventWait:
        break;
    case OpKind::MemOp:
        snprintf(tail, sizeof tail, ",\"memop\":\"%s\",\"bytes\":%zu", op.memop, op.bytes);
        line += tail;
        break;
    }
    line += physicalKey(dev) + "}\n";
    emit(line.data(), static_cast<int>(line.size()), t0);
}

void traceGraphEvent(const Op& op, const char* api, int dev, unsigned long long streamId, Ns at)
{
    if (traceFd() < 0) return;
    const Ns t0 = nowNs();
    char buf[512];
    const int n = snprintf(buf, sizeof buf,
                           "{\"type\":\"graph_event\",\"node\":\"%s\",\"pid\":%d,\"tid\":%d,\"api\":\"%s\",\"dev\":%d,"
                           "\"stream\":%llu,\"at\":%lld%s}\n",
                           op.kind == OpKind::EventRecord ? "record" : "wait", processId(), threadId(), api, dev, streamId,
                           static_cast<long long>(at), physicalKey(dev).c_str());
    emit(buf, n, t0);
}

void traceWait(const char* api, int dev, Ns start, Ns end, WaitReason reason)
{
    if (traceFd() < 0) return;
    const Ns t0 = nowNs();
    char buf[512];
    const int n = snprintf(buf, sizeof buf,
                           "{\"type\":\"wait\",\"pid\":%d,\"tid\":%d,\"api\":\"%s\",\"dev\":%d,\"start\":%lld,\"end\":%lld,"
                           "\"reason\":\"%s\"%s}\n",
                           processId(), threadId(), api, dev, static_cast<long long>(start), static_cast<long long>(end),
                           reasonName(reason), physicalKey(dev).c_str());
    emit(buf, std::min(n, static_cast<int>(sizeof buf) - 1), t0);
}

void traceProfiler(const char* what, Ns at, bool changed)
{
    if (traceFd() < 0) return;
    const Ns t0 = nowNs();
    char buf[256];
    const int n = snprintf(buf, sizeof buf,
                           "{\"type\":\"profiler\",\"what\":\"%s\",\"pid\":%d,\"tid\":%d,\"t\":%lld,\"changed\":%s}\n",
                           what, processId(), threadId(), static_cast<long long>(at), changed ? "true" : "false");
    emit(buf, std::min(n, static_cast<int>(sizeof buf) - 1), t0);
}

namespace {

// A thread's call records not written yet (see traceCall). Writing them, or even formatting them, as
// the call returns would add host time after the call's submission that no driver spends; only the
// fields are kept here.
struct PendingCalls {
    struct Entry {
        const char* api;  // an ApiInfo's name: never freed
        Ns start, end;
        CUresult rc;
    };
    static constexpr int kMax = 16;
    Entry entries[kMax];
    int count = 0;
    unsigned forkGen = 0;
    ~PendingCalls() { traceFlushCalls(); }  // thread exit, and the main thread's exit()
};
thread_local PendingCalls t_calls;

}  // namespace

void traceCall(const char* api, Ns start, Ns end, CUresult rc)
{
    if (traceFd() < 0) return;
    PendingCalls& p = t_calls;
    if (p.count == PendingCalls::kMax || (p.count && p.forkGen != forkGeneration())) traceFlushCalls();
    p.entries[p.count++] = PendingCalls::Entry{api, start, end, rc};
    p.forkGen = forkGeneration();
}

void traceFlushCalls()
{
    PendingCalls& p = t_calls;
    const int count = p.count;
    p.count = 0;
    if (count == 0 || p.forkGen != forkGeneration()) return;  // a forked child's copy of its parent thread's
    if (traceFd() < 0) return;
    for (int i = 0; i < count; ++i) {
        const PendingCalls::Entry& c = p.entries[i];
        const Ns t0 = nowNs();
        char buf[512];
        const int n = snprintf(buf, sizeof buf,
                               "{\"type\":\"call\",\"api\":\"%s\",\"pid\":%d,\"tid\":%d,\"start\":%lld,\"end\":%lld,\"rc\":%d}\n",
                               c.api, processId(), threadId(), static_cast<long long>(c.start),
                               static_cast<long long>(c.end), static_cast<int>(c.rc));
        emit(buf, std::min(n, static_cast<int>(sizeof buf) - 1), t0);
    }
}

void logLine(const char* fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "simcuda: %s\n", buf);
}

void logOnce(const char* what, const char* name)
{
    static auto& seen = *new std::set<std::string>;
    Lock g(bigLock());
    if (seen.insert(std::string(what) + name).second) fprintf(stderr, "simcuda: %s %s\n", what, name);
}

}  // namespace simcuda
