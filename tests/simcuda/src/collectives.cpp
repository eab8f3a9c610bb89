// NCCL's kernels coupled across devices (SIMCUDA_NCCL_RANKS=N): on a GPU a collective's kernel on one rank
// cannot finish before every rank's kernel has started (it spins, waiting for its peers' data). With N set,
// the k-th NCCL kernel (ncclDevKernel_*) on each of devices 0..N-1 is taken as rank d's part of collective
// k (one communicator over those devices, driven by one process: ncclCommInitAll); each starts when its
// stream reaches it (its arrival) and ends its own modelled duration after the last rank's arrival. Until
// the last rank arrives, a kernel's stream is held (work after it deferred, a host sync on it waits), as a
// stream behind an unsatisfied cuStreamWaitValue is. The trace gives each such kernel "peer_wait": the last
// arrival less its own. Off by default: other programs' NCCL kernels run as any kernel.
#include "sim.h"

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

}  // namespace

// Under the model's lock (placeOp's callers hold it).
bool placeCoupled(Stream* s, const Op& op, const char* apiName, Ns submit, bool fromGraph, Ns start, pid_t tid, Ns* endOut)
{
    const int ranks = config().ncclRanks;
    const int dev = s->ctx->dev;
    if (ranks < 2 || dev >= ranks || !isNcclKernel(op)) return false;
    if (g_count.size() < size_t(ranks)) g_count.resize(size_t(ranks), 0);
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
