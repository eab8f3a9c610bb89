// shim/stack_fp.cpp: walks frame-pointer chains and keeps, per distinct walk, the verdict of its one
// comparison with unw_backtrace (stack.cpp's header comment says why a verified walk can be trusted).
//
// Memory, reserved when the path is first turned on: the slot table 256 KiB (resident from the
// start: lookups probe it at random), the walks' frames 1 MiB (touched as verdicts are stored, on
// the slow path that verifies); and 32 KiB of prologue answers (static, touched as used). Nothing is
// allocated on the hot path; the first walk on a thread reads the thread's stack bounds
// (pthread_getattr_np, which allocates once).
#include "shim/stack_fp.h"

#include <atomic>
#include <cstring>

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

namespace gpuspy::shim {

namespace {

constexpr uint32_t kSlots = 2 * kFpMaxWalks;  // open addressing at most half full
constexpr uint32_t kProbes = 64;
constexpr uint32_t kArenaFrames = 1u << 17;  // 4,096 walks of 32 frames

// Entry states. An entry's fields are written before its verdict is stored (release); a reader that
// sees a verdict sees the fields.
enum : uint32_t { kWriting = 0, kVerified = 1, kMismatch = 2, kDead = 3 };

struct Entry {
    std::atomic<uint64_t> key;  // 0 = free; claimed once, never freed
    std::atomic<uint32_t> state;
    uint32_t stackId;
    uint32_t offset;  // into g_frames
    uint32_t count;
    uint32_t params;
    uint32_t pad;
};
static_assert(sizeof(Entry) == 32);

// libunwind's unw_get_proc_info_by_ip and its unw_proc_info_t, of which only the function's bounds
// are read (the struct is 72 bytes in libunwind 1.6; room is left for more).
using ProcInfoFn = int (*)(void* addressSpace, uint64_t ip, void* info, void* arg);
struct ProcInfo {
    uint64_t startIp, endIp;
    uint64_t rest[30];
};

// Zero-initialised: no constructors run (the shim may be entered before them).
std::atomic<bool> g_on{false};
ProcInfoFn g_procInfo = nullptr;
void* g_addressSpace = nullptr;
Entry* g_slots = nullptr;
uint64_t* g_frames = nullptr;
std::atomic<uint32_t> g_maxWalks{0};
std::atomic<uint32_t> g_walks{0};       // entries claimed, stored or dead (may pass g_maxWalks by a racing few)
std::atomic<uint32_t> g_frameCount{0};  // arena frames handed out (may run past kArenaFrames)

// This thread's stack, read once (read: tried; known: usable), whether it gave the path up, and its
// counts.
struct ThreadStack {
    uintptr_t lo, hi;
    bool read, known, gaveUp;
};
thread_local ThreadStack t_stack;
thread_local StackFpStats t_counts;

bool threadStack()
{
    if (t_stack.read) return t_stack.known;
    t_stack.read = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size >= 64) {
        t_stack.lo = reinterpret_cast<uintptr_t>(addr);
        t_stack.hi = t_stack.lo + size;
        t_stack.known = true;
    }
    pthread_attr_destroy(&attr);
    return t_stack.known;
}

inline uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

// Does the function holding the return address ra set up its frame pointer on entry? Its first
// instruction (after an endbr64 or not) must be push rbp, and mov rbp, rsp must follow within
// kPrologueWindow bytes: compilers schedule a few unrelated instructions in between (GCC 12 puts a
// pxor or a test there). The bytes between are not decoded, so an instruction that merely contains
// mov rbp, rsp's three bytes would pass: the verdict also needs the frames to match (stack.cpp).
// Bounds come from the function's FDE (.eh_frame, through libunwind); no FDE (JIT code), or a
// function too short to hold the prologue and a call: no.
constexpr uint64_t kPrologueWindow = 24;

bool framePointerFunction(uint64_t ra)
{
    ProcInfo info{};
    const uint64_t pc = ra - 1;  // inside the call instruction: a call that ends a function still counts as in it
    if (g_procInfo(g_addressSpace, pc, &info, nullptr) != 0) return false;
    if (pc < info.startIp || pc >= info.endIp || info.endIp - info.startIp < 12) return false;
    const auto* code = reinterpret_cast<const uint8_t*>(info.startIp);
    uint64_t size = info.endIp - info.startIp;  // every byte read is the function's own
    static constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    if (std::memcmp(code, kEndbr64, 4) == 0) {
        code += 4;
        size -= 4;
    }
    if (code[0] != 0x55) return false;  // push rbp
    const uint64_t end = size < kPrologueWindow ? size : kPrologueWindow;
    for (uint64_t i = 1; i + 3 <= end; ++i)  // 48 89 e5 and 48 8b ec: the two encodings of mov rbp, rsp
        if (code[i] == 0x48 && ((code[i + 1] == 0x89 && code[i + 2] == 0xe5) || (code[i + 1] == 0x8b && code[i + 2] == 0xec)))
            return true;
    return false;
}

// framePointerFunction's answers by return address (a lookup costs microseconds: dl_iterate_phdr
// and a search of .eh_frame_hdr; walks share most of their return addresses). Direct-mapped, one
// word per entry, ra << 2 | known | answer: a racing store loses an answer, never mixes two.
constexpr uint32_t kAnswerBits = 12;
std::atomic<uint64_t> g_answers[1u << kAnswerBits];

bool framePointerFunctionCached(uint64_t ra)
{
    std::atomic<uint64_t>& slot = g_answers[(ra * 0x9e3779b97f4a7c15ull) >> (64 - kAnswerBits)];
    const uint64_t known = slot.load(std::memory_order_relaxed);
    if ((known & 2) != 0 && known >> 2 == ra) return (known & 1) != 0;
    const bool answer = framePointerFunction(ra);
    if (ra >> 62 == 0) slot.store(ra << 2 | 2 | uint64_t(answer), std::memory_order_relaxed);
    return answer;
}

// Every step the walk took went through a frame-pointer function: frames[i]'s function set rbp up,
// so the link read from the frame below it was that function's own frame record. The last frame is
// not stepped through.
bool everyStepThroughFramePointers(const uint64_t* frames, uint32_t n)
{
    for (uint32_t i = 0; i + 1 < n; ++i)
        if (!framePointerFunctionCached(frames[i])) return false;
    return true;
}

bool sameWalk(const Entry& e, const FpWalk& walk)
{
    return e.params == walk.params && e.count == walk.count &&
           std::memcmp(g_frames + e.offset, walk.frames, walk.count * sizeof(uint64_t)) == 0;
}

// A thread whose walks keep being found wrong (its code, or a library it calls through, has no
// frame pointers) pays a walk and a lookup on top of unw_backtrace for nothing: once it has fallen
// back kGiveUpAfter times while reusing a verified walk less than once per kWorthRatio fallbacks
// (a reuse saves about 8 times what a fallback adds), it stops walking.
constexpr uint64_t kGiveUpAfter = 4096;
constexpr uint64_t kWorthRatio = 8;

void countFallback()
{
    const uint64_t fellBack = ++t_counts.fellBack;
    if (fellBack >= kGiveUpAfter && t_counts.reused * kWorthRatio < fellBack) t_stack.gaveUp = true;
}

void* reserve(size_t bytes, bool populate)
{
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (populate ? MAP_POPULATE : 0);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

bool fpConfigure(void* libunwind, bool on, uint32_t maxWalks)
{
    if (!on) {
        g_on.store(false, std::memory_order_release);
        return true;
    }
    if (!g_procInfo && libunwind) {
        auto fn = reinterpret_cast<ProcInfoFn>(dlsym(libunwind, "_ULx86_64_get_proc_info_by_ip"));
        auto space = static_cast<void**>(dlsym(libunwind, "_ULx86_64_local_addr_space"));
        if (fn && space && *space) {
            g_addressSpace = *space;
            g_procInfo = fn;
        }
    }
    if (!g_procInfo) return false;
    if (!g_slots) {
        auto* slots = static_cast<Entry*>(reserve(kSlots * sizeof(Entry), true));
        auto* frames = static_cast<uint64_t*>(reserve(kArenaFrames * sizeof(uint64_t), false));
        if (!slots || !frames) return false;
        g_frames = frames;
        g_slots = slots;
    }
    g_maxWalks.store(maxWalks < kFpMaxWalks ? maxWalks : kFpMaxWalks, std::memory_order_relaxed);
    t_stack.gaveUp = false;
    g_on.store(true, std::memory_order_release);
    return true;
}

bool fpEnabled() { return !t_stack.gaveUp && g_on.load(std::memory_order_acquire); }

// Reads the caller's frames: not instrumented, as it reads other frames' saved registers.
__attribute__((no_sanitize("address", "thread"))) void fpWalk(uintptr_t frame, FpWalk& walk)
{
    const uint32_t max = walk.limit;
    walk.count = 0;
    if (!threadStack()) return;
    const uintptr_t hi = t_stack.hi;
    if (frame < t_stack.lo || frame > hi - 16 || (frame & 7) != 0) return;
    uint64_t h = 0x9e3779b97f4a7c15ull;
    uint32_t n = 0;
    uintptr_t fp = frame;
    while (n < max) {
        const auto* record = reinterpret_cast<const uint64_t*>(fp);  // [0] the caller's rbp, [1] the return address
        const uint64_t ra = record[1];
        if (ra == 0) break;
        walk.frames[n++] = ra;
        h = mix(h, ra);
        const uintptr_t next = record[0];
        if (next <= fp || next > hi - 16 || (next & 7) != 0) {
            if (next == 0 && n < max) walk.params |= kFpEndsAtZero;
            break;
        }
        fp = next;
    }
    walk.count = n;
    walk.key = mix(mix(h, n), walk.params) | (1ull << 63);  // never 0, which marks a free slot
}

FpVerdict fpLookup(const FpWalk& walk, uint32_t* stackId)
{
    uint32_t slot = uint32_t(walk.key) & (kSlots - 1);
    for (uint32_t probes = 0; probes < kProbes; ++probes, slot = (slot + 1) & (kSlots - 1)) {
        const Entry& e = g_slots[slot];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        if (key == 0) return FpVerdict::Unknown;
        if (key != walk.key) continue;
        const uint32_t state = e.state.load(std::memory_order_acquire);
        if (state == kWriting) {
            ++t_counts.uncached;
            return FpVerdict::Busy;
        }
        if (state == kDead || !sameWalk(e, walk)) continue;
        if (state == kMismatch) {
            countFallback();
            return FpVerdict::Mismatch;
        }
        *stackId = e.stackId;
        ++t_counts.reused;
        return FpVerdict::Verified;
    }
    return FpVerdict::Unknown;
}

FpVerdict fpRecord(const FpWalk& walk, const uint64_t* unwound, uint32_t n, uint32_t stackId)
{
    // No room: not even the verdict (the prologue checks cost microseconds).
    if (g_walks.load(std::memory_order_relaxed) >= g_maxWalks.load(std::memory_order_relaxed)) {
        ++t_counts.uncached;
        return FpVerdict::Unknown;
    }
    const bool sameFrames = n == walk.count && std::memcmp(unwound, walk.frames, n * sizeof(uint64_t)) == 0;
    // Where the walk stopped must be static too: at its limit, or at the outermost frame's mark (a
    // walk that stopped on some other bad link stopped in a function that does not keep rbp, and
    // unw_backtrace may go further through it another time).
    const bool endsWhereItMust = walk.count == walk.limit || (walk.params & kFpEndsAtZero) != 0;
    const bool proven = sameFrames && endsWhereItMust && everyStepThroughFramePointers(walk.frames, walk.count);
    FpVerdict verdict = FpVerdict::Mismatch;
    if (!sameFrames) ++t_counts.mismatchedFrames;
    else if (!proven) ++t_counts.unproven;
    else verdict = FpVerdict::Verified;
    if (verdict == FpVerdict::Verified) ++t_counts.verified;

    uint32_t slot = uint32_t(walk.key) & (kSlots - 1);
    Entry* mine = nullptr;
    for (uint32_t probes = 0; probes < kProbes && !mine; ++probes, slot = (slot + 1) & (kSlots - 1)) {
        Entry& e = g_slots[slot];
        uint64_t key = e.key.load(std::memory_order_acquire);
        if (key == 0 && e.key.compare_exchange_strong(key, walk.key, std::memory_order_acq_rel)) mine = &e;
        // Lost the race for this slot, or it holds another walk (or this one, stored meanwhile by
        // another thread: then a second entry is harmless, the first one found answers).
    }
    if (!mine) {
        ++t_counts.uncached;
        return FpVerdict::Unknown;
    }
    const uint32_t index = g_walks.fetch_add(1, std::memory_order_relaxed);
    const uint32_t offset = g_frameCount.fetch_add(walk.count, std::memory_order_relaxed);
    if (index >= g_maxWalks.load(std::memory_order_relaxed) || uint64_t(offset) + walk.count > kArenaFrames) {
        mine->state.store(kDead, std::memory_order_release);
        ++t_counts.uncached;
        return FpVerdict::Unknown;
    }
    std::memcpy(g_frames + offset, walk.frames, walk.count * sizeof(uint64_t));
    mine->offset = offset;
    mine->count = walk.count;
    mine->params = walk.params;
    mine->stackId = stackId;
    mine->state.store(verdict == FpVerdict::Verified ? kVerified : kMismatch, std::memory_order_release);
    return verdict;
}

void fpAfterForkChild()
{
    if (!g_slots) return;
    for (uint32_t i = 0; i < kSlots; ++i) {
        uint32_t expected = kWriting;
        if (g_slots[i].key.load(std::memory_order_relaxed) != 0)
            g_slots[i].state.compare_exchange_strong(expected, kDead);
    }
}

StackFpStats fpThreadCounts()
{
    StackFpStats counts = t_counts;
    counts.gaveUp = t_stack.gaveUp;
    return counts;
}

uint32_t fpCachedWalks() { return g_walks.load(std::memory_order_relaxed); }

}  // namespace gpuspy::shim
