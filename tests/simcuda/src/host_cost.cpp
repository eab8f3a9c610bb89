// The modelled host-side cost of each entry point, and the clock helpers that spin or sleep on CLOCK_MONOTONIC.
#include "sim.h"

#include <time.h>

#include <algorithm>

namespace simcuda {

Ns nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<Ns>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void spinFor(Ns ns)
{
    if (ns <= 0) return;
    const Ns end = nowNs() + ns;
    while (nowNs() < end) {
    }
}

void waitUntil(Ns deadline)
{
    // Sleep most of the way (the kernel's wake-up is late by tens of µs), then spin for precision.
    constexpr Ns kSpinTail = 60000;
    if (deadline - nowNs() > kSpinTail) {
        const Ns wake = deadline - kSpinTail;
        timespec ts{static_cast<time_t>(wake / 1000000000), static_cast<long>(wake % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
        }
    }
    while (nowNs() < deadline) {
    }
}

namespace {

// Defaults by base name; anything absent costs nothing.
Ns defaultCost(const std::string& base)
{
    // Leaked: registerApi may run from cudart's exit handlers, after static destructors.
    static const auto& kDefaults = *new std::map<std::string, Ns>{{
        {"cuLaunchKernel", 3000}, {"cuLaunchKernelEx", 3000}, {"cuLaunchCooperativeKernel", 3000},
        {"cuEventRecord", 2500}, {"cuEventRecordWithFlags", 2500},
        {"cuCtxSynchronize", 500}, {"cuStreamSynchronize", 500}, {"cuEventSynchronize", 500},
        {"cuMemcpy", 10000}, {"cuMemcpyHtoD", 10000}, {"cuMemcpyDtoH", 10000}, {"cuMemcpyDtoD", 10000},
        {"cuMemcpy2D", 10000}, {"cuMemcpy2DUnaligned", 10000}, {"cuMemcpy3D", 10000}, {"cuMemcpyPeer", 10000},
        {"cuMemcpy3DPeer", 10000},
        {"cuMemcpyAsync", 2000}, {"cuMemcpyHtoDAsync", 2000}, {"cuMemcpyDtoHAsync", 2000}, {"cuMemcpyDtoDAsync", 2000},
        {"cuMemcpy2DAsync", 2000}, {"cuMemcpy3DAsync", 2000}, {"cuMemcpyPeerAsync", 2000}, {"cuMemcpy3DPeerAsync", 2000},
        {"cuMemcpyBatchAsync", 2000},
        {"cuMemsetD8", 2000}, {"cuMemsetD16", 2000}, {"cuMemsetD32", 2000}, {"cuMemsetD2D8", 2000},
        {"cuMemsetD2D16", 2000}, {"cuMemsetD2D32", 2000}, {"cuMemsetD8Async", 2000}, {"cuMemsetD16Async", 2000},
        {"cuMemsetD32Async", 2000}, {"cuMemsetD2D8Async", 2000}, {"cuMemsetD2D16Async", 2000},
        {"cuMemsetD2D32Async", 2000},
        {"cuMemAlloc", 2000}, {"cuMemAllocHost", 2000}, {"cuMemHostAlloc", 2000}, {"cuMemAllocManaged", 2000},
        {"cuMemAllocPitch", 2000}, {"cuMemAllocAsync", 2000}, {"cuMemAllocFromPoolAsync", 2000},
        {"cuStreamQuery", 200}, {"cuEventQuery", 200},
    }};
    auto it = kDefaults.find(base);
    return it == kDefaults.end() ? 0 : it->second;
}

}  // namespace

Ns hostCostOf(const ApiInfo& api)
{
    return api.cost;
}

ApiInfo& registerApi(const char* abiName)
{
    const Config& c = config();
    auto* info = new ApiInfo;  // one per entry point, held by a function-local static: never freed
    info->name = abiName;
    info->base = baseName(abiName);
    auto over = c.hostCost.find(info->base);
    info->poll = info->base == "cuEventQuery" || info->base == "cuStreamQuery";
    info->eventRecord = info->base == "cuEventRecord" || info->base == "cuEventRecordWithFlags";
    info->cost = !c.hostCostOn ? 0 : over != c.hostCost.end() ? over->second : defaultCost(info->base);
    for (size_t i = 0; i < c.fails.size(); ++i)
        if (c.fails[i].name == abiName || c.fails[i].name == info->base) info->failRules.push_back(static_cast<int>(i));
    for (size_t i = 0; i < c.stalls.size(); ++i)
        if (c.stalls[i].name == abiName || c.stalls[i].name == info->base) info->stallRules.push_back(static_cast<int>(i));
    for (size_t i = 0; i < c.signals.size(); ++i)
        if (c.signals[i].name == abiName || c.signals[i].name == info->base) info->signalRules.push_back(static_cast<int>(i));
    return *info;
}

ApiInfo& apiInfo(std::atomic<ApiInfo*>& slot, const char* abiName)
{
    ApiInfo* info = slot.load(std::memory_order_acquire);
    if (info) return *info;
    ApiInfo* fresh;
    {
        RegistrationLock g;  // fork() takes it too, so it never catches a registration half-done
        fresh = &registerApi(abiName);
    }
    if (slot.compare_exchange_strong(info, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;  // another thread registered it first
    return *info;
}

namespace {

// A high estimate of one trace line's write time on this thread: it jumps to a slower write at once and
// decays by 1/16 per faster one. Capped, so that one preempted write does not make the next calls spin
// long; a write slower than the estimate makes its call return late, which the trace shows (the call's
// end after its op's submit).
constexpr Ns kMaxWriteEstimate = 20000;
// Before a thread's first write: a first write (the file's first page, a cold cache) is slow.
constexpr Ns kFirstWriteEstimate = 10000;
thread_local Ns t_writeNs = kFirstWriteEstimate;
thread_local Ns t_returnAt = 0;  // this call's submission instant, once stamped; 0: none yet
thread_local int t_scopes = 0;   // ApiScopes open on this thread (an entry point may call another)

}  // namespace

void noteTraceWrite(Ns ns)
{
    ns = std::min(ns, kMaxWriteEstimate);
    t_writeNs = ns > t_writeNs ? ns : t_writeNs - (t_writeNs - ns) / 16;
}

Ns submissionInstant(int traceLinesAfter)
{
    const Ns now = nowNs();
    if (t_returnAt == 0) {
        t_returnAt = now + (tracing() ? traceLinesAfter * t_writeNs : 0);
    }
    return std::max(now, t_returnAt);
}

ApiScope::ApiScope(ApiInfo& api, bool manualCost) : m_api(api), m_start(config().traceCalls ? nowNs() : 0)
{
    // The call records still pending (SIMCUDA_TRACE_CALLS) are written where their host time disturbs no
    // instant a profiler measures: before this call's modelled cost, so before anything it submits; not
    // inside an event record, whose stamp follows its cost (a profiler records its end event right after
    // the call it times); not in a poll, whose answer must be as fresh as the caller's clock read before
    // it, and whose next answer as soon after (a profiler brackets an event's completion between two
    // polls). traceCall writes them anyway when a thread has 16 pending.
    if (t_scopes++ == 0 && config().traceCalls && !api.poll && !api.eventRecord) traceFlushCalls();
    if (!api.failRules.empty() && injectFault(api, &m_rc)) {
        m_injected = true;
        return;
    }
    if (!manualCost) spinFor(api.cost);
    if (!api.signalRules.empty()) injectSignal(api);
}

ApiScope::~ApiScope()
{
    const bool outermost = --t_scopes == 0;
    const Ns returnAt = outermost ? t_returnAt : 0;
    if (config().traceCalls) traceCall(m_api.name, m_start, std::max(nowNs(), returnAt), m_rc);
    if (!outermost) return;
    // The work was stamped as submitted at returnAt: return no earlier (see submissionInstant).
    while (returnAt && nowNs() < returnAt) {
    }
    t_returnAt = 0;
    if (!m_api.stallRules.empty() && !m_injected) injectStall(m_api);
}

}  // namespace simcuda
