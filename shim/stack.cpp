// shim/stack.cpp: captures host call stacks (libunwind's unw_backtrace, or a frame-pointer walk
// where one has been verified against it), interns them in a lock-free table so a record carries one
// id, and keeps the module map (dl_iterate_phdr) that the drain thread sends, once, ahead of the
// stacks that refer to it.
//
// The frame-pointer path (stack_fp.cpp; GPUSPY_STACK_FP, on by default). A walk of the saved-rbp
// chain costs 1-3 ns a frame against unw_backtrace's ~10, but code built without frame pointers
// (cudart, libcuda, most distribution libraries) that leaves rbp alone makes it skip a caller while
// reading only real return addresses. So a walk is used only once it has been proven, and its
// result is always what unw_backtrace alone would have given:
// - Each capture walks (bounded by the depth; each link 8-aligned, strictly outwards, inside this
//   thread's stack) and looks its walk up in a bounded cache keyed by the walk's return addresses
//   (hash and sequence), how it ended, and the capture's depth/skip. A verified walk answers with the
//   stack id stored with its verdict; any other capture takes unw_backtrace, as without the path.
// - An unknown walk is judged once, on that same call, against unw_backtrace: it is verified only
//   if (1) its frames equal unw_backtrace's, frame for frame and in number; (2) every function it
//   stepped through (all but the last frame's) begins with push rbp, followed within 24 bytes by
//   mov rbp, rsp (compilers schedule a few instructions between the two; bounds from the function's
//   FDE, through libunwind; no FDE, e.g. JIT code: not proven; answers cached per return address);
//   (3) it ended at its limit, or at a zero link, the mark the ABI's outermost frames leave (_start,
//   clone). Otherwise: mismatch.
// Why (1) alone is not enough: a skipped frame can leave the same walk. In `h` calling through one
// indirect call site both itself and a function g built without frame pointers (g calls on, rbp
// untouched), the walk misses g's return address, which is that call site, as are all the next ones:
// within the depth, walk and true stack read alike. Called later from another site, g leaves the
// same walk for another stack. tests/unit/shim_stack_fp_test.cpp builds this case.
// Why (1)+(2)+(3) is: induction on the frames. The walk starts at stackCapture's own frame record.
// If the record it reads for frame i is frame i's true one, the return address there is frame i's
// true one, in a function g; g set rbp to its own frame record on entry (2) and compiled code keeps
// it there, so the link read is the rbp g held when it called, its own record: frame i+1's. All
// of it depends only on the code at the walked addresses, not on the call: a later walk with the
// same addresses reads the true stack. Its end too: the limit is the depth's, and a zero link ends
// the stack for unw_backtrace as it did when verified (3).
// What remains, and why the default is on anyway:
// - Code replaced at the same addresses: verdicts are not forgotten when a library is unloaded. A
//   library mapped later at exactly an unloaded one's addresses, with call instructions ending at
//   exactly a verified walk's return addresses, could make that walk wrong.
// - Code that begins with the frame-pointer prologue and then uses rbp for something else (hand-
//   written assembly; compilers do not emit it); or, as the bytes between push rbp and mov rbp, rsp
//   are not decoded, a function that saves rbp to use it as a register and holds mov rbp, rsp's
//   three bytes inside another instruction within 24 bytes, reached through a walk that (1) lets
//   pass by the coincidence above.
// - A walk that ended at a zero link where unw_backtrace stopped only because it could not unwind
//   the next frame (a caller without unwind information) while rbp happened to be 0.
// Each needs code that no compiler or loader produces in the middle of a CUDA call, and the path is
// what makes a 24-frame stack meet its cost target where frame pointers are valid; GPUSPY_STACK_FP=0
// restores unw_backtrace alone. Where frame pointers are not valid (cudart in between) a capture
// pays a walk and a lookup on top of unw_backtrace (bench/NOTES.md has both costs), until its thread
// gives the path up: after 4,096 fallbacks with less than one reuse per 8 (stack_fp.cpp).
//
// The stack cache (stack_cache.cpp; GPUSPY_STACK_CACHE, on by default) comes next: a capture the
// frame-pointer path did not answer is looked up among the calling thread's last unwinds, each kept
// with the stack words it read, and answered from one whose words all still hold (its header says why
// that is unw_backtrace's answer); a full capture through unw_backtrace teaches it.
//
// Memory, bounded and reserved once by stackConfigure: the slot table 1 MiB (resident from the
// start), stack entries 1 MiB and the frame arena 8 MiB (1 Mi return addresses), made resident ahead
// of use, modules 40 KiB + 256 KiB of paths. A program with 1,000 distinct 24-frame stacks has about
// 1.6 MiB resident. When the table or the arena is full, stackCapture returns 0 and counts.
//
// Page faults are the hazard: a first touch of an anonymous page costs 12-30 us on a virtual machine
// (measured on a Firecracker VM: 25 us per page, against 1 us per page populated in bulk), and a new
// stack lands on a fresh page of the randomly probed slot table almost every time. So the slot table
// is populated when it is mapped, and the sequential entries and frames are populated in chunks
// ahead of their cursors by the drain thread (stackPrefault), never by a capturing app thread.
#include "shim/stack.h"

#include "shim/shim.h"

#include "shim/python.h"
#include "shim/stack_cache.h"
#include "shim/stack_fp.h"
#include "wire/codec.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace gpuspy::shim {

namespace {

constexpr uint32_t kMaxStacks = 1u << 16;
constexpr uint32_t kSlots = 1u << 17;  // twice the stacks: the open-addressing table never fills
constexpr uint32_t kArenaFrames = 1u << 20;
constexpr uint32_t kMaxModules = 1024;
constexpr uint32_t kPathBytes = 256 * 1024;
constexpr uint32_t kMaxPath = 4096;
constexpr unsigned kMaxSkip = 32;
constexpr unsigned kSelfMargin = 2;  // extra frames taken in libgpuspy.so for its own to be dropped
// GPUSPY_STACK_DEEPEN unset: a stack cut short inside a library is retaken at this depth.
constexpr unsigned kDefaultDeepen = wire::kMaxStackDepth;
// Most return addresses one capture reads from stackCapture's caller outwards.
constexpr unsigned kMaxFrames = kMaxSkip + kSelfMargin + wire::kMaxStackDepth;

// Entry states. An entry is written completely before it is marked Ready, and marked Ready before a
// slot points at it: whoever finds an id through the table finds its frames already there.
enum : uint32_t { kWriting = 0, kReady = 1, kDead = 2 };

struct StackEntry {
    uint32_t offset;  // into g_frames
    uint32_t depth;
    std::atomic<uint32_t> state;
    uint32_t pad0;
};
static_assert(sizeof(StackEntry) == 16);

struct ModuleEntry {
    uint64_t start, end, bias;
    uint32_t pathOffset, pathLength;
};

using BacktraceFn = int (*)(void**, int);

// Everything below is zero-initialised (no constructors run: the shim may be entered before them).
std::atomic<unsigned> g_depth{0};
BacktraceFn g_backtrace = nullptr;
void* g_libunwind = nullptr;
bool g_saidNoUnwind = false;
std::atomic<uint64_t>* g_slots = nullptr;  // (hash high 32 bits) << 32 | (entry index + 1); 0 = empty
StackEntry* g_entries = nullptr;
uint64_t* g_frames = nullptr;
std::atomic<uint32_t> g_entryCount{0};  // entries handed out (may run past kMaxStacks when full)
std::atomic<uint32_t> g_frameCount{0};  // arena frames handed out (may run past kArenaFrames)
std::atomic<bool> g_full{false};
std::atomic<uint64_t> g_dropped{0};

// The module map: append-only, written under g_moduleLock (slow path), read without it up to
// g_moduleCount (published with release after the entry is complete).
pthread_mutex_t g_moduleLock = PTHREAD_MUTEX_INITIALIZER;
ModuleEntry g_modules[kMaxModules];
char g_paths[kPathBytes];
uint32_t g_pathUsed = 0;
std::atomic<uint32_t> g_moduleCount{0};
unsigned long long g_lastAdds = ~0ull;  // dl_iterate_phdr's load counter at the last full scan
// gpuspy's own shared object (libgpuspy.so), when this file is linked into one: its frames are
// never the app's, so the innermost ones are dropped whatever skipFrames says (how many frames the
// hook wrappers leave depends on inlining and tail calls). Empty when linked into an executable
// (the unit tests), whose frames are the caller's own.
uint64_t g_selfLo = 0, g_selfHi = 0;
// The main program's mapping (dl_iterate_phdr's object with no name): a stack cut short outside it is
// retaken deeper (stackCapture).
uint64_t g_mainLo = 0, g_mainHi = 0;
unsigned g_deepen = 0;  // GPUSPY_STACK_DEEPEN: the depth such a stack is retaken at (0: never)

// Drain thread only.
uint32_t g_drainModule = 0;
uint32_t g_drainStack = 0;
pid_t g_pid = 0;  // the process stackConfigure ran in, to tell a fork child from a new stream

uint64_t hashFrames(const uint64_t* pcs, uint32_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (uint32_t i = 0; i < n; ++i) {
        h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    return h | (1ull << 63);  // never 0 in the high half: a slot value of 0 means empty
}

bool moduleCovers(uint64_t pc, uint32_t count)
{
    for (uint32_t i = 0; i < count; ++i)
        if (pc >= g_modules[i].start && pc < g_modules[i].end) return true;
    return false;
}

struct ScanState {
    bool first;
    bool unchanged;
};

int onObject(dl_phdr_info* info, size_t, void* arg)
{
    auto* scan = static_cast<ScanState*>(arg);
    if (scan->first) {
        scan->first = false;
        // Nothing was loaded since the last scan (JIT code or a stray address): skip the walk.
        if (info->dlpi_adds == g_lastAdds) {
            scan->unchanged = true;
            return 1;
        }
        g_lastAdds = info->dlpi_adds;
    }
    uint64_t lo = ~0ull, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        uint64_t a = info->dlpi_addr + ph.p_vaddr;
        if (a < lo) lo = a;
        if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
    }
    if (lo >= hi) return 0;
    const uint64_t self = reinterpret_cast<uint64_t>(&stackCapture);
    if (self >= lo && self < hi && info->dlpi_name && info->dlpi_name[0]) {
        g_selfLo = lo;
        g_selfHi = hi;
    }
    if (!(info->dlpi_name && info->dlpi_name[0]) && g_mainHi == 0) {
        g_mainLo = lo;
        g_mainHi = hi;
    }
    // The main program reports an empty name: its path is /proc/self/exe. No allocation here.
    char exe[kMaxPath];
    const char* path = info->dlpi_name;
    size_t len = path ? strnlen(path, kMaxPath - 1) : 0;
    if (len == 0) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) return 0;
        path = exe;
        len = size_t(n);
    }
    // Append-only: modules unloaded since stay (older stacks refer to them); a module already
    // known is not sent twice; another one mapped where an unloaded one was is new.
    uint32_t count = g_moduleCount.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < count; ++i) {
        const ModuleEntry& m = g_modules[i];
        if (m.start == lo && m.end == hi && m.bias == info->dlpi_addr && m.pathLength == len &&
            std::memcmp(g_paths + m.pathOffset, path, len) == 0)
            return 0;
    }
    if (count == kMaxModules) return 1;
    if (g_pathUsed + len > kPathBytes) return 1;
    std::memcpy(g_paths + g_pathUsed, path, len);
    g_modules[count] = ModuleEntry{lo, hi, uint64_t(info->dlpi_addr), g_pathUsed, uint32_t(len)};
    g_pathUsed += uint32_t(len);
    g_moduleCount.store(count + 1, std::memory_order_release);
    return 0;
}

void scanModules()
{
    pthread_mutex_lock(&g_moduleLock);
    ScanState scan{true, false};
    dl_iterate_phdr(onObject, &scan);
    pthread_mutex_unlock(&g_moduleLock);
}

// A new stack: make sure the module map covers its frames before it can be drained.
void coverFrames(const uint64_t* pcs, uint32_t n)
{
    uint32_t count = g_moduleCount.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) {
        if (wire::isPyFrame(pcs[i]) || moduleCovers(pcs[i], count)) continue;
        scanModules();  // dlopen'd since the last scan; a no-op when nothing was loaded
        return;
    }
}

bool sameStack(uint32_t entry, const uint64_t* pcs, uint32_t n)
{
    const StackEntry& e = g_entries[entry];
    return e.depth == n && std::memcmp(g_frames + e.offset, pcs, n * sizeof(uint64_t)) == 0;
}

// Writes a new entry for pcs; returns its index, or UINT32_MAX when full.
uint32_t newEntry(const uint64_t* pcs, uint32_t n)
{
    if (g_full.load(std::memory_order_relaxed)) return UINT32_MAX;
    uint32_t index = g_entryCount.fetch_add(1, std::memory_order_relaxed);
    if (index >= kMaxStacks) {
        g_full.store(true, std::memory_order_relaxed);
        return UINT32_MAX;
    }
    uint32_t offset = g_frameCount.fetch_add(n, std::memory_order_relaxed);
    if (uint64_t(offset) + n > kArenaFrames) {
        g_full.store(true, std::memory_order_relaxed);
        g_entries[index].state.store(kDead, std::memory_order_release);
        return UINT32_MAX;
    }
    std::memcpy(g_frames + offset, pcs, n * sizeof(uint64_t));
    g_entries[index].offset = offset;
    g_entries[index].depth = n;
    g_entries[index].state.store(kReady, std::memory_order_release);
    return index;
}

uint32_t intern(const uint64_t* pcs, uint32_t n)
{
    const uint64_t h = hashFrames(pcs, n);
    const uint64_t tag = h & 0xffffffff00000000ull;
    uint32_t slot = uint32_t(h) & (kSlots - 1);
    uint32_t mine = UINT32_MAX;  // our new entry, once written
    for (uint32_t probes = 0; probes < kSlots; ++probes, slot = (slot + 1) & (kSlots - 1)) {
        uint64_t v = g_slots[slot].load(std::memory_order_acquire);
        while (v == 0) {
            if (mine == UINT32_MAX) {
                coverFrames(pcs, n);
                mine = newEntry(pcs, n);
                if (mine == UINT32_MAX) {
                    g_dropped.fetch_add(1, std::memory_order_relaxed);
                    return 0;
                }
            }
            if (g_slots[slot].compare_exchange_strong(v, tag | (mine + 1), std::memory_order_acq_rel,
                                                      std::memory_order_acquire))
                return mine + 1;
            // Lost the race: v now holds the winner, maybe the same stack. Then our entry stays an
            // unreferenced duplicate definition (harmless, and only as many as such races).
        }
        if ((v & 0xffffffff00000000ull) == tag && sameStack(uint32_t(v) - 1, pcs, n)) return uint32_t(v);
    }
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return 0;
}

void* reserve(size_t bytes, bool populate)
{
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (populate ? MAP_POPULATE : 0);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and pages fault in as used
#endif

// How far ahead of its cursor each sequential region is kept resident, and in what steps.
constexpr uint32_t kEntriesAhead = 2048;  // 32 KiB of entries
constexpr uint32_t kFramesAhead = 32768;  // 256 KiB of frames (about 1,300 24-frame stacks)
uint32_t g_entriesResident = 0;           // populated up to here (prefault caller only)
uint32_t g_framesResident = 0;
pthread_mutex_t g_prefaultLock = PTHREAD_MUTEX_INITIALIZER;
bool g_slotsShared = false;  // a forked child: every page is copy-on-write shared with the parent

// Makes [from, to) elements of a region resident without writing to them: racing writers are safe.
template <class T>
uint32_t populate(T* base, uint32_t from, uint32_t to, uint32_t limit)
{
    if (to > limit) to = limit;
    if (to <= from) return from;
    const uintptr_t page = 4096;
    uintptr_t lo = reinterpret_cast<uintptr_t>(base + from) & ~(page - 1);
    uintptr_t hi = (reinterpret_cast<uintptr_t>(base + to) + page - 1) & ~(page - 1);
    if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) != 0) return limit;  // unsupported: stop trying
    return to;
}

// The absolute path of the file mapped at address (from /proc/self/maps) into out; its length, 0
// when not found. No allocation: the file is read in pieces of whole lines.
size_t mappedPath(uintptr_t address, char* out, size_t cap)
{
    OwnedFd fd = fdOwn(open("/proc/self/maps", O_RDONLY | O_CLOEXEC));  // out of the app's way (fds.cpp)
    if (fd.fd < 0) return 0;
    char buf[2 * kMaxPath];
    size_t have = 0, found = 0;  // found: the path's length
    for (;;) {
        const ssize_t r = read(fd.fd, buf + have, sizeof buf - have);
        if (r <= 0) break;
        have += size_t(r);
        size_t start = 0;
        for (;;) {
            char* nl = static_cast<char*>(std::memchr(buf + start, '\n', have - start));
            if (!nl) break;
            *nl = 0;
            // "lo-hi perms offset dev inode    /path"
            char* line = buf + start;
            char* end = nullptr;
            const uintptr_t lo = strtoull(line, &end, 16);
            const uintptr_t hi = *end == '-' ? strtoull(end + 1, nullptr, 16) : 0;
            const char* path = strchr(line, '/');
            if (address >= lo && address < hi && path) {
                found = strnlen(path, cap);
                if (found >= cap) found = 0;
                else std::memcpy(out, path, found);
                fdRelease(fd);
                return found;
            }
            start = size_t(nl - buf) + 1;
        }
        if (start == 0 && have == sizeof buf) break;  // a line longer than any path: give up
        std::memmove(buf, buf + start, have - start);
        have -= start;
    }
    fdRelease(fd);
    return 0;
}

// The directory of the object this code is linked into (libgpuspy.so; the test executable in the
// unit tests), with its trailing '/', into out; false when unknown. dladdr gives the name the
// object was loaded by, which is relative when LD_PRELOAD was, and the program may have changed
// directory since: then the mapping's absolute path in /proc/self/maps is used.
bool ownDirectory(char* out, size_t cap)
{
    Dl_info info{};
    const void* self = reinterpret_cast<const void*>(&stackConfigure);
    if (!dladdr(self, &info) || !info.dli_fname || !info.dli_fname[0]) return false;
    size_t len = 0;
    if (info.dli_fname[0] == '/') {
        len = strnlen(info.dli_fname, cap);
        if (len >= cap) return false;
        std::memcpy(out, info.dli_fname, len);
    } else {
        len = mappedPath(uintptr_t(self), out, cap);
    }
    while (len > 0 && out[len - 1] != '/') --len;
    if (len == 0) return false;
    out[len] = 0;
    return true;
}

// libunwind's unw_backtrace, loaded privately (RTLD_LOCAL): libunwind exports _Unwind_* and
// backtrace, which must not interpose on the app's libgcc_s and libc ones (exceptions would unwind
// through libunwind); only our calls reach it. The copy next to libgpuspy.so comes first (the
// release tarball ships one in lib/gpuspy/), then the system's.
void* loadLibunwind()
{
    char path[kMaxPath];
    constexpr char kName[] = "libunwind.so.8";
    void* lib = nullptr;
    if (ownDirectory(path, sizeof path - sizeof kName)) {
        std::memcpy(path + strlen(path), kName, sizeof kName);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) lib = dlopen(kName, RTLD_NOW | RTLD_LOCAL);
    return lib;
}

// The first of pcs (from stackCapture's caller outwards) a stack keeps: past skipFrames and gpuspy's own.
unsigned firstKept(const uint64_t* pcs, unsigned n, unsigned skipFrames)
{
    unsigned first = skipFrames;
    while (first < n && pcs[first] - g_selfLo < g_selfHi - g_selfLo) ++first;
    return first;
}

// The frames from stackCapture's caller outwards (pcs[0] is the return address into it): drops
// skipFrames of them and gpuspy's own, keeps depth, interns. In a Python process the stack interned
// is the merged one (the calling thread's Python frames in place of the eval loop's), *pyNeed (when
// asked for) how many of pcs it took to place every Python frame (0: not all were), and *nativeId,
// when asked for, is the native stack's own id (what the frame-pointer cache keeps). With placedOnly
// (pcs may be cut short of the stack), a capture that did not place every Python frame interns nothing
// and returns 0: the caller takes it again in full. pm: the calling thread's Python memo (pythonMemo).
uint32_t internCaptured(const uint64_t* pcs, unsigned n, unsigned skipFrames, unsigned depth, PythonMemo* pm,
                        uint32_t* nativeId = nullptr, uint32_t* pyNeed = nullptr, bool placedOnly = false)
{
    const unsigned first = firstKept(pcs, n, skipFrames);
    if (first >= n) return 0;
    uint32_t count = n - first;
    if (count > depth) count = depth;
    if (pythonActive()) {
        uint64_t merged[wire::kMaxStackDepth];
        uint32_t placed = 0;
        const uint32_t m = pythonMerge(pm, pcs + first, count, merged, wire::kMaxStackDepth, &placed);
        if (pyNeed && placed) *pyNeed = first + placed;
        if (placedOnly && !placed) return 0;
        if (m > 0) {
            if (nativeId) *nativeId = intern(pcs + first, count);
            uint32_t id = pythonLastStack(pm, merged, m);
            if (!id) pythonRememberStack(pm, merged, m, id = intern(merged, m));
            return id;
        }
    }
    const uint32_t id = intern(pcs + first, count);
    if (nativeId) *nativeId = id;
    return id;
}

void sayOnce(bool& said, const char* msg)
{
    if (said) return;
    said = true;
    const ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}

}  // namespace

void stackConfigure(unsigned depth)
{
    if (depth > wire::kMaxStackDepth) depth = wire::kMaxStackDepth;
    if (depth == 0) {
        g_depth.store(0, std::memory_order_release);
        return;
    }
    if (!g_backtrace) {
        g_libunwind = loadLibunwind();
        if (g_libunwind) g_backtrace = reinterpret_cast<BacktraceFn>(dlsym(g_libunwind, "unw_backtrace"));
        if (!g_backtrace) {
            sayOnce(g_saidNoUnwind, "gpuspy: libunwind.so.8 not found (next to libgpuspy.so or on the system); "
                                    "host stacks are off\n");
            return;
        }
    }
    if (!g_slots) {
        g_slots = static_cast<std::atomic<uint64_t>*>(reserve(kSlots * sizeof(uint64_t), true));
        g_entries = static_cast<StackEntry*>(reserve(kMaxStacks * sizeof(StackEntry), false));
        g_frames = static_cast<uint64_t*>(reserve(kArenaFrames * sizeof(uint64_t), false));
        if (!g_slots || !g_entries || !g_frames) {
            g_slots = nullptr;
            return;
        }
        stackPrefault();
    }
    if (!g_pid) {
        pythonConfigure();
        const char* fp = setting("GPUSPY_STACK_FP");
        stackUseFramePointers(!(fp && fp[0] == '0'));
        const char* cache = setting("GPUSPY_STACK_CACHE");
        scConfigure(!(cache && cache[0] == '0'));
        const char* deepen = setting("GPUSPY_STACK_DEEPEN");
        g_deepen = deepen ? unsigned(strtoul(deepen, nullptr, 10)) : kDefaultDeepen;
        if (g_deepen > wire::kMaxStackDepth) g_deepen = wire::kMaxStackDepth;
    }
    g_pid = getpid();
    scanModules();
    // libunwind's first call initialises its globals and this thread's trace cache (dozens of page
    // faults, milliseconds on a VM): here, once, rather than inside the app's first recorded call.
    void* warm[4];
    OwnPipesScope ownPipes;  // its validation pipe, made now, goes out of the app's way (fds.cpp)
    g_backtrace(warm, 4);
    g_depth.store(depth, std::memory_order_release);
}

void stackPrefault()
{
    if (!g_entries || !g_frames) return;
    pthread_mutex_lock(&g_prefaultLock);
    if (g_slotsShared) {
        // A write to a shared page is a copy-on-write fault: copy the slot table now, and the
        // regions ahead of the cursors below (what lies behind them is only read from now on).
        g_slotsShared = false;
        populate(g_slots, 0, kSlots, kSlots);
        g_entriesResident = g_entryCount.load(std::memory_order_relaxed);
        g_framesResident = g_frameCount.load(std::memory_order_relaxed);
        if (g_entriesResident > kMaxStacks) g_entriesResident = kMaxStacks;
        if (g_framesResident > kArenaFrames) g_framesResident = kArenaFrames;
    }
    const uint32_t entries = g_entryCount.load(std::memory_order_relaxed);
    const uint32_t frames = g_frameCount.load(std::memory_order_relaxed);
    if (entries + kEntriesAhead / 2 > g_entriesResident)
        g_entriesResident = populate(g_entries, g_entriesResident, entries + kEntriesAhead, kMaxStacks);
    if (frames + kFramesAhead / 2 > g_framesResident)
        g_framesResident = populate(g_frames, g_framesResident, frames + kFramesAhead, kArenaFrames);
    pthread_mutex_unlock(&g_prefaultLock);
}

// A capture whose frames reached the limit asked for (the stack goes on past the depth) and whose
// deepest frame lies outside the main program: the user's frames may be beyond it (cuSOLVER -> cuBLAS ->
// cuBLASLt takes more than 24 frames from the driver to main). It is taken again at GPUSPY_STACK_DEEPEN
// frames; the deeper stack is the one interned for this call. Only calls whose stack is cut inside a
// library pay for it; a Python thread's stack is placed by its eval loops (pythonMerge), not retaken.
namespace {
// frames: from stackCapture's caller outwards, count of them read with `limit` asked for; the stack kept
// is internCaptured's (skipFrames and gpuspy's own dropped, at most depth).
inline bool cutOutsideMain(const uint64_t* frames, uint32_t count, unsigned limit, unsigned skipFrames, unsigned depth)
{
    if (g_mainHi == 0 || count < limit) return false;  // the unwind ended before its limit: the whole stack
    const unsigned first = firstKept(frames, count, skipFrames);
    if (first >= count) return false;
    const uint64_t deepest = frames[first + std::min(count - first, depth) - 1];
    return deepest < g_mainLo || deepest >= g_mainHi;
}
}  // namespace

uint32_t stackCapture(unsigned skipFrames)
{
    const unsigned configured = g_depth.load(std::memory_order_acquire);
    if (configured == 0) return 0;
    if (skipFrames > kMaxSkip) skipFrames = kMaxSkip;
    const unsigned margin = g_selfHi ? kSelfMargin : 0;
    unsigned depth = configured;
    uint32_t result = 0, shallow = 0;
    for (;;) {
        bool cut = false;
        {  // one capture at this depth; each way out says whether it was cut
            const unsigned wanted = skipFrames + margin + depth;  // from our caller outwards

            const uint32_t params = depth | skipFrames << 8 | margin << 16;
            uint64_t walked[kMaxFrames];
            FpWalk walk{0, params, wanted, 0, walked};
            FpVerdict verdict = FpVerdict::Mismatch;
            if (fpEnabled()) {
                fpWalk(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)), walk);
                if (walk.count > 0) {
                    uint32_t id = 0;
                    verdict = fpLookup(walk, &id);
                    // The same native walk runs under many Python lines: merge this call's Python frames.
                    if (verdict == FpVerdict::Verified) {
                        result = pythonActive()
                                     ? internCaptured(walked, walk.count, skipFrames, depth, pythonMemo())
                                     : id;
                        cut = cutOutsideMain(walked, walk.count, wanted, skipFrames, depth);
                        goto captured;
                    }
                }
            }
            const bool judge = verdict == FpVerdict::Unknown;  // the cache keeps the native stack's id: in full
            // The stack cache (stack_cache.cpp): this thread's last unwinds, reused where the stack still
            // holds every word they read; exactly unw_backtrace's frames.
            const uintptr_t frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
            const bool cache = scEnabled();
            if (cache) {
                const uint64_t* cached = nullptr;
                uint32_t count = 0, cachedId = 0, cachedNative = 0;
                if (scLookup(frame, params, wanted, &cached, &count, &cachedId, &cachedNative)) {
                    if (judge) fpRecord(walk, cached, count, cachedNative);
                    result = pythonActive() ? internCaptured(cached, count, skipFrames, depth, pythonMemo()) : cachedId;
                    cut = cutOutsideMain(cached, count, wanted, skipFrames, depth);
                    goto captured;
                }
            }
            // buf[0] is the return address inside stackCapture itself (unw_backtrace's caller); buf[1] on
            // are the frames the walk read, from our caller outwards.
            void* buf[1 + kMaxFrames];
            // A Python thread's stack ends at its outermost eval loop (pythonMerge): no more frames are asked
            // for than the thread's last captures took to get there (unw_backtrace's cost is per frame), and a
            // capture that falls short of it is taken again in full, so the stack is the same either way.
            const bool py = pythonActive();
            PythonMemo* const pm = py ? pythonMemo() : nullptr;  // one thread-state lookup for the whole capture
            unsigned ask = wanted;
            if (py && !judge) {
                const unsigned hint = pythonNativeHint(pm);
                if (hint != 0 && hint < wanted) ask = hint;
            }
            uint32_t nativeId = 0, need = 0, id = 0;
            bool retaken = false;
            for (;;) {
                int n;
                {
                    // libunwind remakes its validation pipe when the app closed it: above the floor again.
                    OwnPipesScope ownPipes;
                    n = g_backtrace(buf, int(1 + ask));
                }
                if (n <= 1) {
                    result = 0;
                    goto captured;
                }
                const auto* pcs = reinterpret_cast<const uint64_t*>(buf + 1);
                // The stack may go on past the frames asked for: taken only if they hold every Python frame.
                const bool mayBeShort = ask < wanted && unsigned(n - 1) >= ask;
                id = internCaptured(pcs, unsigned(n - 1), skipFrames, depth, pm, judge || cache ? &nativeId : nullptr,
                                    py ? &need : nullptr, mayBeShort);
                if (judge && nativeId != 0) fpRecord(walk, pcs, uint32_t(n - 1), nativeId);
                if (cache && ask == wanted && nativeId != 0)
                    scLearn(frame, params, wanted, reinterpret_cast<const uint64_t*>(buf), uint32_t(n), id, nativeId);
                if (!mayBeShort || need != 0) {
                    cut = ask == wanted && cutOutsideMain(pcs, uint32_t(n - 1), wanted, skipFrames, depth);
                    break;
                }
                ask = wanted;
                retaken = true;
            }
            if (need != 0 || retaken) pythonLearnHint(pm, need, retaken);
            result = id;
        }
    captured:
        if (!cut || depth >= g_deepen || pythonActive()) return result ? result : shallow;
        shallow = result;  // kept should the deeper capture find no room
        depth = g_deepen;
    }
}

size_t stackDrainDefs(uint8_t* out, size_t cap)
{
    if (!g_entries) return 0;
    size_t written = 0;
    // Stacks complete now; the modules they need were published before them (coverFrames), so
    // loading the module count after their states sees those modules.
    uint32_t limit = g_entryCount.load(std::memory_order_acquire);
    if (limit > kMaxStacks) limit = kMaxStacks;
    uint32_t ready = g_drainStack;
    while (ready < limit && g_entries[ready].state.load(std::memory_order_acquire) != kWriting) ++ready;
    const uint32_t modules = g_moduleCount.load(std::memory_order_acquire);
    // Python frame definitions, likewise published before the stacks that use them.
    written += pythonDrainDefs(out, cap);

    while (g_drainModule < modules) {
        const ModuleEntry& m = g_modules[g_drainModule];
        wire::ModuleDefBody body{m.start, m.end, m.bias, m.pathLength, 0};
        size_t n = wire::encodeVar(out + written, cap - written, body, g_paths + m.pathOffset, m.pathLength);
        if (n == 0) return written;
        written += n;
        ++g_drainModule;
    }
    while (g_drainStack < ready) {
        const StackEntry& e = g_entries[g_drainStack];
        if (e.state.load(std::memory_order_acquire) == kReady) {
            wire::StackDefBody body{g_drainStack + 1, e.depth};
            size_t n = wire::encodeVar(out + written, cap - written, body, g_frames + e.offset,
                                       uint32_t(e.depth * sizeof(uint64_t)));
            if (n == 0) return written;
            written += n;
        }
        ++g_drainStack;
    }
    return written;
}

void stackAfterForkChild()
{
    // Also called in the same process when the drain thread starts a new stream (the collector
    // went away): then only the cursors go back, as other threads are still capturing.
    const pid_t pid = getpid();
    const bool forked = pid != g_pid;
    g_pid = pid;
    if (forked && g_entries) {
        // Only the forking thread survives: the module lock's holder and the writers of
        // half-written entries are gone.
        pthread_mutex_init(&g_moduleLock, nullptr);
        pthread_mutex_init(&g_prefaultLock, nullptr);
        g_slotsShared = true;
        uint32_t limit = g_entryCount.load(std::memory_order_acquire);
        if (limit > kMaxStacks) limit = kMaxStacks;
        for (uint32_t i = 0; i < limit; ++i) {
            uint32_t expected = kWriting;
            g_entries[i].state.compare_exchange_strong(expected, kDead);
        }
    }
    if (forked) fpAfterForkChild();
    pythonAfterForkChild(forked);
    g_drainModule = 0;
    g_drainStack = 0;
}

uint64_t stackDroppedCount() { return g_dropped.load(std::memory_order_relaxed); }

bool stackUseFramePointers(bool on, uint32_t maxWalks)
{
    return fpConfigure(g_libunwind, on, maxWalks);
}

StackFpStats stackFpStats()
{
    StackFpStats stats = fpThreadCounts();
    stats.walks = fpCachedWalks();
    return stats;
}

}  // namespace gpuspy::shim
