// shim/clock.cpp: the TSC-to-CLOCK_MONOTONIC map behind the call scope's stamps. A TSC read costs
// about 11 ns on our VMs against 25 ns for clock_gettime, and a call takes two to four stamps; but a
// record must state CLOCK_MONOTONIC exactly enough to sit around the driver's own timestamps.
//
// So: the TSC only where it is invariant (constant_tsc and nonstop_tsc), and every conversion close
// to a fresh anchor. An anchor is a clock_gettime read bracketed by two TSC reads (its error is half
// the bracket, ~10 ns); the rate comes from anchors about a second apart; whichever call finds the
// map older than kStaleNs takes the next anchor (one clock_gettime per kStaleNs, on no particular
// thread). A new anchor far from where the map predicted it says the TSC is not a clock here
// (unsynchronised CPUs, a migrated VM): stamps go back to clock_gettime for good, said once.
#include "shim/clock.h"

#include "shim/shim.h"

#include <atomic>
#include <cstring>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

namespace gpuspy::shim {

namespace {

constexpr uint64_t kWarmUpNs = 1000000;  // the first rate is measured over at least 1 ms
// No conversion extrapolates more than 2 ms from its anchor, nor more than 1/16 of the span the rate
// was measured over: the rate's error (two anchors' errors over that span) adds at most 1/8 of an
// anchor's error.
constexpr uint64_t kStaleNs = 2000000;
constexpr uint64_t kStaleSpanShare = 16;
constexpr uint64_t kRingSpacingNs = 125000000;  // rate anchors: one per 125 ms, 8 kept (about 1 s)
constexpr unsigned kRing = 8;
constexpr int64_t kBrokenNs = 2000;          // a prediction off by more than this: the TSC is no clock
constexpr uint64_t kMaxBracketTicks = 2000;  // a bracket wider than this was preempted: not an anchor

struct Anchor {
    uint64_t tick = 0;
    uint64_t ns = 0;
};

// Read on every call.
std::atomic<bool> g_tsc{false};
std::atomic<uint32_t> g_seq{0};  // seqlock over the published map: odd while it is written
std::atomic<uint64_t> g_tick0{0}, g_ns0{0}, g_mult{0}, g_staleTicks{0};
// Warm-up only: when the last anchor was taken (ns), 0 when warm or never.
std::atomic<uint64_t> g_warmingSinceNs{0};

std::atomic<bool> g_capable{false};         // the TSC may be used (until it proves not to be a clock)
std::atomic<uint64_t> g_bestBracket{~0ull};  // the narrowest anchor bracket seen, in ticks

// Writers (one at a time, whoever holds g_writer, for a few dozen instructions).
std::atomic<bool> g_writer{false};
Anchor g_ring[kRing];
unsigned g_ringCount = 0, g_ringNewest = 0;
bool g_said = false;

uint64_t monoNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// constant_tsc: the TSC ticks at one rate whatever the CPU's frequency; nonstop_tsc: it keeps
// ticking in deep sleep states. Both, or the TSC is not a clock.
bool tscInvariant()
{
#if defined(__x86_64__)
    OwnedFd fd = fdOwn(open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC));  // out of the app's way (fds.cpp)
    if (fd.fd < 0) return false;
    char buf[8192];
    const ssize_t n = read(fd.fd, buf, sizeof buf - 1);  // the first CPU's flags are in its first 8 KiB
    fdRelease(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    const char* flags = strstr(buf, "\nflags");
    if (!flags) return false;
    const char* end = strchr(flags + 1, '\n');
    if (!end) return false;
    auto has = [&](const char* word) {
        const size_t len = strlen(word);
        for (const char* p = flags; (p = strstr(p, word)) && p < end; p += len)
            if (p[-1] == ' ' && (p[len] == ' ' || p[len] == '\n')) return true;
        return false;
    };
    return has("constant_tsc") && has("nonstop_tsc");
#else
    return false;
#endif
}

// An anchor from the narrowest of up to four brackets. One within twice the narrowest bracket seen
// is taken at once. When none is (a loaded machine slows every bracket past a lucky early best), the
// narrowest is taken anyway and the floor rises to half of it: a map left stale would extrapolate
// its rate for as long as that lasts, and its error grows with the distance, where an anchor's is
// half its bracket. Only brackets past kMaxBracketTicks (all four preempted) give no anchor.
bool takeAnchor(Anchor& a)
{
#if defined(__x86_64__)
    uint64_t narrowest = ~0ull;
    for (int attempt = 0; attempt < 4; ++attempt) {
        const uint64_t t1 = __rdtsc();
        const uint64_t ns = monoNs();
        const uint64_t t2 = __rdtsc();
        const uint64_t bracket = t2 - t1;
        if (t2 < t1 || bracket > kMaxBracketTicks || bracket >= narrowest) continue;
        narrowest = bracket;
        a.tick = t1 + bracket / 2;
        a.ns = ns;
        uint64_t best = g_bestBracket.load(std::memory_order_relaxed);
        if (bracket < best) g_bestBracket.store(best = bracket, std::memory_order_relaxed);
        if (bracket <= 2 * best + 16) return true;
    }
    if (narrowest == ~0ull) return false;
    const uint64_t floor = narrowest / 2;
    if (g_bestBracket.load(std::memory_order_relaxed) < floor) g_bestBracket.store(floor, std::memory_order_relaxed);
    return true;
#else
    (void)a;
    return false;
#endif
}

ClockMap publishedMap()
{
    ClockMap m;
    // A writer holds the sequence odd for a few stores; one preempted there must get the CPU back.
    for (unsigned spins = 0;; ++spins) {
        if (spins >= 64) sched_yield();
        // Acquire loads (plain moves on x86): the second sequence read cannot pass the fields'.
        const uint32_t s = g_seq.load(std::memory_order_acquire);
        m.tick0 = g_tick0.load(std::memory_order_acquire);
        m.ns0 = g_ns0.load(std::memory_order_acquire);
        m.mult = g_mult.load(std::memory_order_acquire);
        if (!(s & 1) && g_seq.load(std::memory_order_relaxed) == s) return m;
    }
}

void publish(const Anchor& a, uint64_t mult, uint64_t staleNs)
{
    // Odd first: the acquire keeps the field stores after it; the release publishes them.
    const uint32_t s = g_seq.fetch_add(1, std::memory_order_acquire);
    g_tick0.store(a.tick, std::memory_order_relaxed);
    g_ns0.store(a.ns, std::memory_order_relaxed);
    g_mult.store(mult, std::memory_order_relaxed);
    g_staleTicks.store(uint64_t(((unsigned __int128)staleNs << 32) / mult), std::memory_order_relaxed);
    g_seq.store(s + 2, std::memory_order_release);
}

void giveUp(const char* why)
{
    g_capable.store(false, std::memory_order_relaxed);
    g_tsc.store(false, std::memory_order_release);
    g_warmingSinceNs.store(0, std::memory_order_relaxed);
    if (g_said) return;
    g_said = true;
    const ssize_t r = write(2, why, strlen(why));
    (void)r;
}

// Under the writer lock: checks anchor `a` against the published map, folds it into the rate and
// publishes the map through it. True when the published map is now at least as fresh as `a`.
bool fold(const Anchor& a)
{
    if (!g_capable.load(std::memory_order_relaxed)) return false;
    const bool warm = g_tsc.load(std::memory_order_relaxed);
    if (warm) {
        const ClockMap m = publishedMap();
        if (int64_t(a.tick - m.tick0) <= 0) return true;  // another thread published a newer anchor meanwhile
        // Only a recent map predicts well; an old one (no calls for a while) is just replaced.
        if (int64_t(a.tick - m.tick0) <= 4 * int64_t(g_staleTicks.load(std::memory_order_relaxed))) {
            const int64_t off = int64_t(a.ns - m.toNs(a.tick));
            if (off > kBrokenNs || off < -kBrokenNs) {
                giveUp("gpuspy: the TSC does not keep time with CLOCK_MONOTONIC here; stamping with clock_gettime\n");
                return false;
            }
        }
    }
    if (g_ringCount == 0 || int64_t(a.ns - g_ring[g_ringNewest].ns) >= int64_t(kRingSpacingNs)) {
        g_ringNewest = g_ringCount == 0 ? 0 : (g_ringNewest + 1) % kRing;
        g_ring[g_ringNewest] = a;
        if (g_ringCount < kRing) ++g_ringCount;
    }
    const Anchor& base = g_ring[g_ringCount < kRing ? 0 : (g_ringNewest + 1) % kRing];
    if (int64_t(a.ns - base.ns) < int64_t(kWarmUpNs) || int64_t(a.tick - base.tick) <= 0) {
        g_warmingSinceNs.store(a.ns | 1, std::memory_order_relaxed);  // not yet: the next call's anchor
        return false;
    }
    const uint64_t mult = uint64_t(((unsigned __int128)(a.ns - base.ns) << 32) / (a.tick - base.tick));
    const uint64_t span = (a.ns - base.ns) / kStaleSpanShare;
    publish(a, mult, span < kStaleNs ? span : kStaleNs);
    if (!warm) {
        g_tsc.store(true, std::memory_order_release);
        g_warmingSinceNs.store(0, std::memory_order_relaxed);
    }
    return true;
}

// Takes an anchor and publishes the map through it. The anchor is taken outside the lock: a thread
// preempted there delays only itself. False when the map was not refreshed (the anchor was
// preempted every time, or the TSC is not used).
bool refresh()
{
    Anchor a;
    if (!g_capable.load(std::memory_order_relaxed) || !takeAnchor(a)) return false;
    for (unsigned spins = 0; g_writer.exchange(true, std::memory_order_acquire); ++spins)
        if (spins >= 64) sched_yield();
    const bool fresh = fold(a);
    g_writer.store(false, std::memory_order_release);
    return fresh;
}

}  // namespace

void clockConfigure()
{
    if (!tscInvariant()) return;
    g_capable.store(true, std::memory_order_relaxed);
    // Warming up from now: the calls that follow take anchors until one is far enough from the first.
    g_warmingSinceNs.store(monoNs() | 1, std::memory_order_relaxed);
    refresh();
}

bool clockUsesTsc()
{
    return g_tsc.load(std::memory_order_relaxed);
}

ClockMap clockMapFor(bool tsc, uint64_t stamp)
{
    if (!tsc) return ClockMap{};
    ClockMap m = publishedMap();
    if (int64_t(stamp - m.tick0) > int64_t(g_staleTicks.load(std::memory_order_relaxed)) && refresh())
        m = publishedMap();
    return m;
}

void clockWarmUp(uint64_t nowNs)
{
    const uint64_t since = g_warmingSinceNs.load(std::memory_order_relaxed);
    if (since != 0 && nowNs - since >= kWarmUpNs / 4) refresh();
}

void clockSetBestBracketForTest(uint64_t ticks)
{
    g_bestBracket.store(ticks, std::memory_order_relaxed);
}

void clockAfterForkChild()
{
    g_writer.store(false, std::memory_order_relaxed);
    const uint32_t s = g_seq.load(std::memory_order_relaxed);
    if (!(s & 1)) return;
    // The fork cut a write short: the map may mix two anchors. Publish a whole one.
    g_seq.store(s + 1, std::memory_order_relaxed);
    if (g_tsc.load(std::memory_order_relaxed) && !refresh()) giveUp("gpuspy: no clock anchor after fork; stamping with clock_gettime\n");
}

}  // namespace gpuspy::shim
