// shim/window.cpp: capture windows, the recording switch every hook reads: which calls are recorded
// (inside a window) and which are only counted (outside one: the dormant path), what opens and closes
// a window (cuProfilerStart/Stop, an NVTX range, time, the collector's control), and the Window records
// that tell the collector where each window began and ended and what it left out.
#include "shim/shim.h"
#include "wire/codec.h"

#include <pthread.h>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {

std::atomic<uint32_t> g_window{kNoWindows};
thread_local LeftOutSlot* t_leftOutSlot GS_TLS = nullptr;
thread_local unsigned t_leftOutGen GS_TLS = 0;
unsigned g_leftOutGen = 0;

namespace {

// Calls left out, per thread: a slot of per-category counters that only its thread writes (plain
// stores), summed by whoever emits a Window record. Slots are never given back (a thread's counts stay
// in the process total); past kSlots threads, the rest share one slot with locked adds. The dormant
// path itself (countLeftOut) is inline in shim.h.
constexpr uint32_t kSlots = 1024;
LeftOutSlot g_slots[kSlots + 1];  // [kSlots]: the shared one
std::atomic<uint32_t> g_slotsUsed{0};

enum class Mode : uint8_t { None, ProfilerApi, Nvtx, Time };
struct Config {
    bool windowed = false;  // any window setting: recording starts closed
    bool paused = false;    // GPUSPY_PAUSED=1: only the collector's control opens a window
    Mode mode = Mode::None;
    char nvtxName[256] = {};
    char nvtxDomain[256] = {};  // empty: any domain
    uint32_t maxWindows = 1;    // 0: no limit (repeat)
    uint64_t delayNs = 0, durationNs = 0;
    uint64_t loadNs = 0;        // the delay counts from the library's load
};
Config g_cfg;
std::atomic<uint32_t> g_opened{0};      // windows opened so far
std::atomic<uint64_t> g_openedAtNs{0};  // when the open window began (duration)
std::atomic<bool> g_timeStarted{false}; // Time mode: its one window was opened

// Window records waiting for the drain thread: flips are rare, the ring is small; a full ring
// loses the record (the collector still sees the calls' window numbers).
constexpr uint32_t kPending = 64;
wire::WindowBody g_pending[kPending];
std::atomic<bool> g_ready[kPending];
std::atomic<uint32_t> g_write{0};
uint32_t g_read = 0;  // the drain thread's

uint64_t parseSeconds(const char* s)
{
    if (!s || !*s) return 0;
    const double v = strtod(s, nullptr);
    return v > 0 ? uint64_t(v * 1e9) : 0;
}

void leftOutTotals(uint64_t* out)
{
    for (size_t c = 0; c < wire::kWindowCategories; ++c) out[c] = 0;
    const uint32_t used = g_slotsUsed.load(std::memory_order_acquire);
    for (uint32_t i = 0; i <= kSlots; ++i) {
        if (i < kSlots && i >= used) continue;
        for (size_t c = 0; c < wire::kWindowCategories; ++c) out[c] += g_slots[i].n[c].load(std::memory_order_relaxed);
    }
}

void post(wire::WindowEdge edge, wire::WindowTrigger trigger, uint32_t index, uint64_t atNs, uint32_t tid)
{
    const uint32_t w = g_write.fetch_add(1, std::memory_order_acq_rel);
    const uint32_t i = w % kPending;
    if (g_ready[i].load(std::memory_order_acquire)) return;  // the drain thread is behind: lost
    wire::WindowBody& b = g_pending[i];
    b = wire::WindowBody{};
    b.timeNs = atNs;
    b.index = index;
    b.tid = tid;
    b.edge = edge;
    b.trigger = trigger;
    leftOutTotals(b.leftOut);
    g_ready[i].store(true, std::memory_order_release);
    drainWake();
}

}  // namespace

void countLeftOutSlow(Api api)
{
    if (t_leftOutGen != g_leftOutGen + 1 || !t_leftOutSlot) {
        const uint32_t i = g_slotsUsed.fetch_add(1, std::memory_order_acq_rel);
        t_leftOutSlot = i < kSlots ? &g_slots[i] : nullptr;
        t_leftOutGen = g_leftOutGen + 1;
    }
    const size_t c = size_t(kApis[size_t(api)].category) % wire::kWindowCategories;
    if (t_leftOutSlot) {
        std::atomic<uint64_t>& n = t_leftOutSlot->n[c];
        n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else {
        g_slots[kSlots].n[c].fetch_add(1, std::memory_order_relaxed);
    }
}


// --duration without --delay: recording from the start (not from the drain thread's first pass,
// which comes after the first calls).
void openTimeWindowAtStart(uint64_t at)
{
    if (g_cfg.mode != Mode::Time || g_cfg.delayNs != 0 || g_cfg.paused) return;
    g_timeStarted.store(true);
    windowOpen(wire::WindowTrigger::Time, at, 0);
}

void windowConfigure()
{
    // At load (settings.cpp: NVTX may come before any CUDA call) and again at the first recorded call
    // (a library not loaded by the dynamic loader): once.
    static std::atomic<bool> s_done{false};
    if (s_done.exchange(true)) return;
    g_cfg = Config{};
    g_cfg.loadNs = loadMonoNs();
    const char* range = setting("GPUSPY_CAPTURE_RANGE");
    const char* end = setting("GPUSPY_CAPTURE_END");
    const char* paused = setting("GPUSPY_PAUSED");
    g_cfg.delayNs = parseSeconds(setting("GPUSPY_DELAY"));
    g_cfg.durationNs = parseSeconds(setting("GPUSPY_DURATION"));
    if (range && strcmp(range, "cudaProfilerApi") == 0) {
        g_cfg.mode = Mode::ProfilerApi;
    } else if (range && strncmp(range, "nvtx:", 5) == 0 && range[5]) {
        g_cfg.mode = Mode::Nvtx;
        const char* name = range + 5;
        const char* at = strrchr(name, '@');
        const size_t n = at ? size_t(at - name) : strlen(name);
        if (n < sizeof g_cfg.nvtxName) memcpy(g_cfg.nvtxName, name, n);
        if (at && strlen(at + 1) < sizeof g_cfg.nvtxDomain) strcpy(g_cfg.nvtxDomain, at + 1);
    } else if (g_cfg.delayNs || g_cfg.durationNs) {
        g_cfg.mode = Mode::Time;
    }
    if (end && strncmp(end, "repeat", 6) == 0) g_cfg.maxWindows = end[6] == ':' ? uint32_t(strtoul(end + 7, nullptr, 10)) : 0;
    g_cfg.paused = paused && paused[0] == '1';
    g_cfg.windowed = g_cfg.mode != Mode::None || g_cfg.paused;
    g_opened.store(0);
    g_timeStarted.store(false);
    g_window.store(g_cfg.windowed ? 0 : kNoWindows, std::memory_order_release);
    openTimeWindowAtStart(g_cfg.loadNs);
}

bool windowOpen(wire::WindowTrigger trigger, uint64_t atNs, uint32_t tid)
{
    if (g_window.load(std::memory_order_acquire) != 0) return false;
    // Triggers from the app (profiler API, NVTX) wait out the delay and respect the window limit; the
    // collector's control does not.
    if (trigger != wire::WindowTrigger::Control) {
        if (atNs < g_cfg.loadNs + g_cfg.delayNs) return false;
        if (g_cfg.maxWindows && g_opened.load() >= g_cfg.maxWindows) return false;
    }
    const uint32_t index = g_opened.fetch_add(1) + 1;
    uint32_t expected = 0;
    if (!g_window.compare_exchange_strong(expected, index, std::memory_order_acq_rel)) {
        g_opened.fetch_sub(1);
        return false;
    }
    g_openedAtNs.store(atNs, std::memory_order_relaxed);
    post(wire::WindowEdge::Begin, trigger, index, atNs, tid);
    return true;
}

bool windowClose(wire::WindowTrigger trigger, uint64_t atNs, uint32_t tid)
{
    uint32_t w = g_window.load(std::memory_order_acquire);
    if (w == 0) return false;
    if (!g_window.compare_exchange_strong(w, 0, std::memory_order_acq_rel)) return false;
    // Recording everything until now (no windows set): that was window 1, from the stream's start.
    if (w == kNoWindows) {
        w = 1;
        g_opened.store(1);
    }
    post(wire::WindowEdge::End, trigger, w, atNs, tid);
    return true;
}

void windowOnProfilerApi(bool start)
{
    if (g_cfg.mode != Mode::ProfilerApi) return;
    if (start) windowOpen(wire::WindowTrigger::ProfilerApi, nowNs(), currentTid());
    else windowClose(wire::WindowTrigger::ProfilerApi, nowNs(), currentTid());
}

// NVTX: a range named as asked opens a window; the same range's end closes it. Push/pop ranges are
// per thread: the window belongs to the depth it was pushed at on the thread that pushed it.
namespace {
thread_local int t_triggerDepth GS_TLS = -1;
std::atomic<uint64_t> g_triggerRangeId{0};
}  // namespace

const char* windowNvtxName() { return g_cfg.mode == Mode::Nvtx ? g_cfg.nvtxName : nullptr; }
const char* windowNvtxDomain() { return g_cfg.nvtxDomain; }

void windowOnNvtxPush(int depth, bool matches)
{
    if (g_cfg.mode != Mode::Nvtx || t_triggerDepth >= 0 || !matches) return;
    if (windowOpen(wire::WindowTrigger::Nvtx, nowNs(), currentTid())) t_triggerDepth = depth;
}

void windowOnNvtxPop(int depth)
{
    if (t_triggerDepth < 0 || depth != t_triggerDepth) return;
    t_triggerDepth = -1;
    windowClose(wire::WindowTrigger::Nvtx, nowNs(), currentTid());
}

void windowOnNvtxStart(uint64_t rangeId, bool matches)
{
    if (g_cfg.mode != Mode::Nvtx || !matches) return;
    uint64_t none = 0;
    if (!g_triggerRangeId.compare_exchange_strong(none, rangeId)) return;
    if (!windowOpen(wire::WindowTrigger::Nvtx, nowNs(), currentTid())) g_triggerRangeId.store(0);
}

void windowOnNvtxEnd(uint64_t rangeId)
{
    uint64_t id = rangeId;
    if (!rangeId || !g_triggerRangeId.compare_exchange_strong(id, 0)) return;
    windowClose(wire::WindowTrigger::Nvtx, nowNs(), currentTid());
}

void windowTick(uint64_t now)
{
    // The drain thread, each pass: time windows, and the duration limit of any window.
    const uint32_t w = g_window.load(std::memory_order_acquire);
    if (g_cfg.mode == Mode::Time && w == 0 && !g_timeStarted.load() && now >= g_cfg.loadNs + g_cfg.delayNs) {
        g_timeStarted.store(true);
        windowOpen(wire::WindowTrigger::Time, now, 0);
        return;
    }
    if (w != 0 && w != kNoWindows && g_cfg.durationNs && now >= g_openedAtNs.load(std::memory_order_relaxed) + g_cfg.durationNs)
        windowClose(wire::WindowTrigger::Time, now, 0);
}

uint32_t windowState(uint64_t leftOut[wire::kWindowCategories])
{
    leftOutTotals(leftOut);
    return g_window.load(std::memory_order_acquire);
}

bool windowsInUse() { return g_cfg.windowed || g_opened.load() != 0; }

size_t drainWindowRecords(uint8_t* out, size_t cap, bool final)
{
    size_t n = 0;
    for (;;) {
        const uint32_t i = g_read % kPending;
        if (!g_ready[i].load(std::memory_order_acquire)) break;
        if (cap - n < wire::encodedSize<wire::WindowBody>()) return n;
        n += wire::encode(out + n, cap - n, g_pending[i]);
        g_ready[i].store(false, std::memory_order_release);
        ++g_read;
    }
    if (final && windowsInUse() && cap - n >= wire::encodedSize<wire::WindowBody>()) {
        wire::WindowBody b{};
        b.timeNs = nowNs();
        b.index = g_opened.load();
        b.edge = wire::WindowEdge::Tally;
        leftOutTotals(b.leftOut);
        n += wire::encode(out + n, cap - n, b);
    }
    return n;
}

void windowAfterForkChild()
{
    // A new process: its own counts and windows, as configured at load.
    ++g_leftOutGen;
    for (auto& s : g_slots)
        for (auto& c : s.n) c.store(0, std::memory_order_relaxed);
    g_slotsUsed.store(0);
    for (auto& r : g_ready) r.store(false);
    g_write.store(0);
    g_read = 0;
    g_triggerRangeId.store(0);
    t_triggerDepth = -1;
    g_opened.store(0);
    g_timeStarted.store(false);
    g_window.store(g_cfg.windowed ? 0 : kNoWindows, std::memory_order_release);
    openTimeWindowAtStart(nowNs());
}

}  // namespace gpuspy::shim
