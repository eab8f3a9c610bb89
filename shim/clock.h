// shim/clock.h: the host clock the call scope stamps records with: the CPU's time-stamp counter where
// it is invariant, converted to CLOCK_MONOTONIC ns through a linear map; clock_gettime elsewhere.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace gpuspy::shim {

// ns = ns0 + (stamp - tick0) * mult / 2^32. For clock_gettime stamps the map is the identity.
struct ClockMap {
    uint64_t tick0 = 0;
    uint64_t ns0 = 0;
    uint64_t mult = uint64_t(1) << 32;

    uint64_t toNs(uint64_t stamp) const
    {
        const __int128 d = __int128(int64_t(stamp - tick0)) * __int128(mult);
        return ns0 + uint64_t(int64_t(d >> 32));
    }
    uint64_t durationNs(uint64_t stamps) const { return uint64_t((unsigned __int128)stamps * mult >> 32); }
};

// Once, before the first record (pthread_once in the runtime): whether the TSC may be used, and its
// first anchor. Until a rate has been measured (tens of ms of calls), stamps are clock_gettime's.
void clockConfigure();
// Whether a scope starting now stamps with the TSC. A scope keeps its answer for all its stamps.
bool clockUsesTsc();
inline uint64_t clockStamp(bool tsc)
{
#if defined(__x86_64__)
    if (tsc) return __rdtsc();
#else
    (void)tsc;
#endif
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
// This thread's CPU time (ns): against the wall clock, how long the thread was off the CPU (preempted,
// or asleep in the driver) between two readings. A system call where the vDSO has none: timed calls only.
inline uint64_t threadCpuNs()
{
    timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
// The process's CPU time (ns), every thread's: how busy it was across a thread's pause between CUDA calls
// (wire::kCallIdleBefore). A system call: read only after a long call or a long pause.
inline uint64_t processCpuNs()
{
    timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
// The map for TSC stamps up to `stamp`, re-anchored first when stamp lies past the current anchor's
// freshness (so that no conversion extrapolates far). The identity for clock_gettime stamps.
ClockMap clockMapFor(bool tsc, uint64_t stamp);
// A scope that stamped with clock_gettime ended at nowNs: while the TSC's rate is still being
// measured, takes the next anchor when it is due.
void clockWarmUp(uint64_t nowNs);
// Tests only: pretend the narrowest anchor bracket seen so far was `ticks` wide.
void clockSetBestBracketForTest(uint64_t ticks);
// Forked child (one thread): a writer that held the map's lock in the parent is gone.
void clockAfterForkChild();

}  // namespace gpuspy::shim
