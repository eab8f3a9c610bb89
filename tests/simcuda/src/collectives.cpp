// NCCL's kernels coupled across devices (SIMCUDA_NCCL_RANKS=N): on a GPU a collective's kernel on one rank
// cannot finish before every rank's kernel has started (it spins, waiting for its peers' data). With N set,
// the k-th NCCL kernel (ncclDevKernel_*) on each of devices 0..N-1 is taken as rank d's part of collective
// k (one communicator over those devices, driven by one process: ncclCommInitAll); each starts when its
// stream reaches it (its arrival) and ends its own modelled duration after the last rank's arrival. Until
// the last rank arrives, a kernel's stream is held (work after it deferred, a host sync on it waits), as a
// stream behind an unsatisfied cuStreamWaitValue is. The trace gives each such kernel "peer_wait": the last
// arrival less its own. Off by default: other programs' NCCL kernels run as any kernel.
//
// In one process a rank is the device ordinal it uses (ncclCommInitAll's devices 0..N-1, whichever GPUs
// CUDA_VISIBLE_DEVICES made them); across processes (below) its physical device, since each process may call its
// GPU device 0 (a rank launched with CUDA_VISIBLE_DEVICES=r using its device 0 is physical device r's rank).
//
// One process per GPU (SIMCUDA_NCCL_JOB set as well): the ranks are the devices 0..N-1 of every process of the
// job, each process driving its own (as tensor-parallel servers run, ncclCommInitRank). Their arrivals meet in
// a shared-memory segment of the job (shm_open "/simcuda-nccl.<uid>.<job>"; job "auto": named for the parent
// process, its pid and start time, which every worker a launcher started shares): the k-th NCCL kernel on
// device d posts its start in slot [d][k]. A process's kernel is held until every rank's k-th start is posted
// (CLOCK_MONOTONIC is one clock for all processes), then ends its duration after the last; the process notices
// other processes' arrivals on its own syncs and queries of the held stream, and from a small thread that polls
// every 200 us while a kernel is held. Each process traces its own kernels, peer_wait included.
#include "sim.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace simcuda {
namespace {

struct Arrival {
    Stream* s;
    Op op;
    const char* api;
    Ns submit, start;
    bool fromGraph;
    pid_t tid;
};
std::map<unsigned long long, std::vector<Arrival>> g_pending;  // collective number -> arrivals so far
std::vector<unsigned long long> g_count;                        // NCCL kernels per device

bool isNcclKernel(const Op& op) { return op.kind == OpKind::Kernel && op.name.find("ncclDevKernel") != std::string::npos; }

// ---- across processes
constexpr int kMaxRanks = 16;
constexpr unsigned long long kRing = 1024;  // a rank cannot run kRing collectives ahead of another (it waits at each)
struct Slot {
    std::atomic<unsigned long long> seq;  // k + 1 once the k-th arrival's start is written
    std::atomic<long long> start;
};
struct Segment {
    std::atomic<int> attached;  // processes of the job still alive: the last one out removes the segment
    Slot slot[kMaxRanks][kRing];
};
static_assert(std::atomic<unsigned long long>::is_always_lock_free, "slots are shared between processes");

Segment* g_segment = nullptr;
pid_t g_segmentPid = 0;  // the process that attached (a forked child attaches anew)
char g_segmentName[96];
std::vector<std::pair<unsigned long long, Arrival>> g_waiting;  // this process's held kernels: (k, arrival)
std::atomic<size_t> g_waitingCount{0};  // its size, read by the poller without the lock
pid_t g_pollerPid = 0;

// "auto": the parent's pid and start time (field 22 of /proc/PPID/stat), shared by the workers of one launch.
std::string jobName()
{
    const std::string& job = config().ncclJob;
    if (job != "auto") return job;
    const pid_t pp = getppid();
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pp));
    unsigned long long started = 0;
    if (FILE* f = fopen(path, "re")) {
        const size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        if (const char* p = strrchr(buf, ')')) {
            // after the name: state is field 3, starttime field 22
            int field = 2;
            for (; *p && field < 22; ++p)
                if (*p == ' ') ++field;
            started = strtoull(p, nullptr, 10);
        }
    }
    return "ppid" + std::to_string(pp) + "-" + std::to_string(started);
}

void detach()
{
    if (!g_segment || g_segmentPid != getpid()) return;
    if (g_segment->attached.fetch_sub(1) == 1) shm_unlink(g_segmentName);
}

Segment* segment()
{
    if (g_segment && g_segmentPid == getpid()) return g_segment;
    g_segment = nullptr;
    snprintf(g_segmentName, sizeof g_segmentName, "/simcuda-nccl.%u.%s", static_cast<unsigned>(getuid()), jobName().c_str());
    for (char* c = g_segmentName + 1; *c; ++c)
        if (*c == '/') *c = '_';
    const int fd = shm_open(g_segmentName, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        logLine("SIMCUDA_NCCL_JOB: shm_open %s failed: %s", g_segmentName, strerror(errno));
        return nullptr;
    }
    void* m = MAP_FAILED;
    if (ftruncate(fd, sizeof(Segment)) == 0)  // zero-filled once; the same size for every process
        m = mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        logLine("SIMCUDA_NCCL_JOB: mapping %s failed: %s", g_segmentName, strerror(errno));
        return nullptr;
    }
    g_segment = static_cast<Segment*>(m);
    g_segmentPid = getpid();
    g_segment->attached.fetch_add(1);
    static bool registered = false;
    if (!registered) {
        registered = true;
        atexit(detach);
    }
    return g_segment;
}

// The last arrival of collective k when every rank's is posted.
bool lastArrival(Segment* seg, unsigned long long k, Ns* last)
{
    Ns at = 0;
    for (int d = 0; d < config().ncclRanks; ++d) {
        const Slot& sl = seg->slot[d][k % kRing];
        if (sl.seq.load(std::memory_order_acquire) != k + 1) return false;
        at = std::max(at, static_cast<Ns>(sl.start.load(std::memory_order_relaxed)));
    }
    *last = at;
    return true;
}

// Sleeps (never spins: it shares the host with the ranks): 200 us while a kernel is held, 2 ms otherwise. The
// interval delays only when the host sees a release, never the device times (they follow the arrivals).
void* poller(void*)
{
    for (;;) {
        const bool waiting = g_waitingCount.load(std::memory_order_relaxed) > 0;
        struct timespec ts = {0, waiting ? 200'000 : 2'000'000};
        nanosleep(&ts, nullptr);
        if (!waiting) continue;
        Lock g(bigLock());
        pollCoupled();
    }
    return nullptr;
}

void startPoller()
{
    if (g_pollerPid == getpid()) return;
    g_pollerPid = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  // the host's signals go to its own threads
    pthread_t t;
    if (pthread_create(&t, nullptr, poller, nullptr) == 0) {
        pthread_setname_np(t, "simcuda-nccl");
        pthread_detach(t);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Ends a held kernel of this process at `last` + its duration, and goes on with its stream.
void finish(Arrival& a, Ns last, Stream* current, Ns* endOut)
{
    const Ns end = last + a.op.duration;
    a.op.peerWait = static_cast<long long>(last - a.start);
    traceOp(a.op, a.api, a.s->ctx->dev, a.s->ctx->id, a.s->id, a.submit, a.start, end, a.fromGraph, a.tid);
    if (a.s == current) {
        a.s->tail = end;
        *endOut = end;
    } else {
        release(a.s, end);
    }
}

bool placeAcrossProcesses(Stream* s, const Op& op, const char* apiName, Ns submit, bool fromGraph, Ns start, pid_t tid,
                          Ns* endOut)
{
    Segment* seg = segment();
    if (!seg) return false;
    const int dev = physicalDevice(s->ctx->dev);  // the rank's slot: its GPU, whatever ordinal the process uses
    const unsigned long long k = g_count[size_t(dev)]++;
    Slot& mine = seg->slot[dev][k % kRing];
    mine.start.store(static_cast<long long>(start), std::memory_order_relaxed);
    mine.seq.store(k + 1, std::memory_order_release);
    Arrival a{s, op, apiName, submit, start, fromGraph, tid ? tid : threadId()};
    Ns last = 0;
    if (lastArrival(seg, k, &last)) {
        finish(a, last, s, endOut);
        return true;
    }
    s->tail = start;
    ValueWait w;
    w.coupled = true;
    hold(s, w);
    *endOut = start + op.duration;
    g_waiting.emplace_back(k, std::move(a));
    g_waitingCount.store(g_waiting.size(), std::memory_order_relaxed);
    startPoller();
    return true;
}

}  // namespace

void giveUpCoupled(Stream* s, Ns at)
{
    for (size_t i = 0; i < g_waiting.size();) {
        Arrival& a = g_waiting[i].second;
        if (a.s != s) {
            ++i;
            continue;
        }
        a.op.peerWait = static_cast<long long>(at - a.start);
        traceOp(a.op, a.api, s->ctx->dev, s->ctx->id, s->id, a.submit, a.start, at, a.fromGraph, a.tid);
        g_waiting.erase(g_waiting.begin() + static_cast<long>(i));
    }
    g_waitingCount.store(g_waiting.size(), std::memory_order_relaxed);
}

void pollCoupled()
{
    // Releasing a stream places its deferred work, which may add (or at once finish) further held kernels.
    for (bool progress = true; progress && g_segment;) {
        progress = false;
        for (size_t i = 0; i < g_waiting.size(); ++i) {
            Ns last = 0;
            if (!lastArrival(g_segment, g_waiting[i].first, &last)) continue;
            Arrival a = std::move(g_waiting[i].second);
            g_waiting.erase(g_waiting.begin() + static_cast<long>(i));
            g_waitingCount.store(g_waiting.size(), std::memory_order_relaxed);
            Ns unused = 0;
            finish(a, last, nullptr, &unused);
            progress = true;
            break;
        }
    }
}

// Under the model's lock (placeOp's callers hold it).
bool placeCoupled(Stream* s, const Op& op, const char* apiName, Ns submit, bool fromGraph, Ns start, pid_t tid, Ns* endOut)
{
    const int ranks = config().ncclRanks;
    const bool acrossProcesses = !config().ncclJob.empty() && ranks <= kMaxRanks;
    // Across processes a rank is its GPU (each process may call it device 0); in one process, the ordinal it uses
    // (ncclCommInitAll's devices 0..N-1, whichever GPUs CUDA_VISIBLE_DEVICES made them).
    const int dev = acrossProcesses ? physicalDevice(s->ctx->dev) : s->ctx->dev;
    if (ranks < 2 || dev >= ranks || !isNcclKernel(op)) return false;
    if (g_count.size() < size_t(ranks)) g_count.resize(size_t(ranks), 0);
    if (acrossProcesses) return placeAcrossProcesses(s, op, apiName, submit, fromGraph, start, tid, endOut);
    const unsigned long long k = g_count[size_t(dev)]++;
    std::vector<Arrival>& arrived = g_pending[k];
    // Traced when the last rank arrives, maybe by its thread: the submitting thread is named now.
    arrived.push_back(Arrival{s, op, apiName, submit, start, fromGraph, tid ? tid : threadId()});
    if (arrived.size() < size_t(ranks)) {
        // Held until the last rank arrives: its end is not known yet.
        s->tail = start;
        ValueWait w;
        w.coupled = true;
        hold(s, w);
        *endOut = start + op.duration;
        return true;
    }
    Ns last = 0;
    for (const Arrival& a : arrived) last = std::max(last, a.start);
    std::vector<Arrival> done;
    done.swap(arrived);
    g_pending.erase(k);
    for (Arrival& a : done) {
        const Ns end = last + a.op.duration;
        a.op.peerWait = static_cast<long long>(last - a.start);
        traceOp(a.op, a.api, a.s->ctx->dev, a.s->ctx->id, a.s->id, a.submit, a.start, end, a.fromGraph, a.tid);
        if (a.s == s) {
            s->tail = end;
            *endOut = end;
        } else {
            release(a.s, end);
        }
    }
    return true;
}

}  // namespace simcuda
