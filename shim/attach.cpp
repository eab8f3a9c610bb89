// shim/attach.cpp: profiling a process that is already running (`gpuspy attach PID`, x86-64 Linux).
// The injector dlopen()s this library into the process (no constructor of ours starts anything then)
// and calls gpuspy_attach on a thread it borrowed; that only starts our own attach thread, which
// swaps the driver pointers the process holds for our wrappers, starts recording, and rescans while
// attached (CUDA may be initialised after the attach). gpuspy_detach puts every pointer back and ends
// the stream; the library stays mapped (a thread may be inside a wrapper), and a later attach works.
//
// Where a process keeps driver pointers: cudart (static or shared) in a table in its own .bss, filled
// through cuGetProcAddress; a -lcuda program in its GOT (RELRO when linked -z now). So the candidates
// are the real driver's answers for every hooked ABI, from dlsym on libcuda and from cuGetProcAddress
// for each name, version and per-thread flag of driver_hooks.def; the places searched are only the
// writable data of loaded objects (never the heap, where stale copies lie; never libcuda's own tables;
// never ours), plus GOT slots found by relocation name (a lazy slot still holds a PLT address).
#include "shim/shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {
namespace {

// A driver pointer the process holds, swapped for ours: put back at detach (when still ours).
struct Slot {
    void** where;
    void* original;  // this slot's own real pointer (per-thread twins, non-exported answers differ)
    void* ours;
};

// A real driver address and what answers it.
struct Candidate {
    void* real;
    void* ours;
};

constexpr size_t kMaxSlots = 8192;
constexpr size_t kMaxCandidates = 4 * kApiCount + 16;
// A large process (PyTorch and its libraries) has thousands of mappings; these tables are touched only
// by an attach.
constexpr size_t kMaxRanges = 32768;
constexpr size_t kMapsBytes = 4u << 20;
constexpr size_t kOptionMax = 4096;
constexpr uint64_t kFirstRescanNs = 20000000ull;  // 20 ms after a change, doubling to 1 s while none
constexpr uint64_t kLastRescanNs = 1000000000ull;
constexpr uint64_t kDetachFlushNs = 5000000000ull;

Slot g_slots[kMaxSlots];
size_t g_slotCount = 0;
Candidate g_candidates[kMaxCandidates];
size_t g_candidateCount = 0;
void* g_cudaBase = nullptr;  // libcuda's load address once seen

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;  // the attach thread's life and the requests
pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
bool g_threadRunning = false;  // an attach thread exists (attached, or detaching)
bool g_detachRequested = false;
char g_options[kOptionMax];
char g_statusPath[kOptionMax];        // the attaching gpuspy's status file
char g_detachStatusPath[kOptionMax];  // a `gpuspy attach --detach`'s, told the end too
std::atomic<uint64_t> g_attachedAtNs{0};  // 0: not started by an attach

// ---- the process's memory: which ranges are readable, which writable, now (/proc/self/maps)
struct Range {
    uintptr_t lo, hi;
    bool write;
};
Range g_maps[kMaxRanges];
size_t g_mapCount = 0;

void readMaps()
{
    g_mapCount = 0;
    const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    static char buf[kMapsBytes];  // the attach thread's only: one at a time
    size_t n = 0;
    for (ssize_t r; n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0;) n += size_t(r);
    close(fd);
    buf[n] = 0;
    for (char* line = buf; line && *line && g_mapCount < kMaxRanges;) {
        char* next = strchr(line, '\n');
        if (next) *next++ = 0;
        unsigned long lo = 0, hi = 0;
        char perms[8] = "";
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[0] == 'r')
            g_maps[g_mapCount++] = {uintptr_t(lo), uintptr_t(hi), perms[1] == 'w'};
        line = next;
    }
}

const Range* mapOf(uintptr_t a)
{
    for (size_t i = 0; i < g_mapCount; ++i)
        if (a >= g_maps[i].lo && a < g_maps[i].hi) return &g_maps[i];
    return nullptr;
}

// ---- candidates: every real driver address of a hooked ABI, with the wrapper that answers it
void addCandidate(void* real, void* ours)
{
    if (!real || real == ours || g_candidateCount == kMaxCandidates) return;
    for (size_t i = 0; i < g_candidateCount; ++i)
        if (g_candidates[i].real == real) return;
    g_candidates[g_candidateCount++] = {real, ours};
}

// Every word of the data scanned is looked up: sorted, and bounded by the lowest and highest first.
uintptr_t g_candidateLo = 0, g_candidateHi = 0, g_oursLo = 0, g_oursHi = 0;

void sortCandidates()
{
    for (size_t i = 1; i < g_candidateCount; ++i)
        for (size_t j = i; j > 0 && g_candidates[j - 1].real > g_candidates[j].real; --j) {
            const Candidate c = g_candidates[j];
            g_candidates[j] = g_candidates[j - 1];
            g_candidates[j - 1] = c;
        }
    g_candidateLo = g_candidateCount ? uintptr_t(g_candidates[0].real) : 0;
    g_candidateHi = g_candidateCount ? uintptr_t(g_candidates[g_candidateCount - 1].real) : 0;
    g_oursLo = uintptr_t(-1);
    g_oursHi = 0;
    for (size_t i = 0; i < g_candidateCount; ++i) {
        const uintptr_t o = uintptr_t(g_candidates[i].ours);
        if (o < g_oursLo) g_oursLo = o;
        if (o > g_oursHi) g_oursHi = o;
    }
    for (size_t i = 1; i < kApiCount; ++i) {
        const uintptr_t o = uintptr_t(kWrappers[i]);
        if (o < g_oursLo) g_oursLo = o;
        if (o > g_oursHi) g_oursHi = o;
    }
}

void* oursFor(void* value)
{
    const uintptr_t v = uintptr_t(value);
    if (v < g_candidateLo || v > g_candidateHi) return nullptr;
    size_t lo = 0, hi = g_candidateCount;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (uintptr_t(g_candidates[mid].real) < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < g_candidateCount && g_candidates[lo].real == value ? g_candidates[lo].ours : nullptr;
}

bool isOurs(void* value)
{
    if (g_oursHi && (uintptr_t(value) < g_oursLo || uintptr_t(value) > g_oursHi)) return false;
    if (value == reinterpret_cast<void*>(&::cuGetProcAddress_v2) || value == reinterpret_cast<void*>(&::cuGetProcAddress))
        return true;
    for (size_t i = 1; i < kApiCount; ++i)
        if (kWrappers[i] == value) return true;
    return false;
}

// libcuda's handle, only if the process has loaded it (attach never loads the driver itself).
void* loadedDriver()
{
    void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD);
    return h;
}

// False while the process has no driver loaded (it initialises CUDA later).
bool collectCandidates()
{
    if (g_candidateCount > 0) return true;
    void* h = loadedDriver();
    if (!h) return false;
    DlsymFn dl = realDlsym();
    if (!dl) return false;
    using Gpa2 = decltype(&::cuGetProcAddress_v2);
    auto gpa = reinterpret_cast<Gpa2>(dl(h, "cuGetProcAddress_v2"));
    void* gpa1 = dl(h, "cuGetProcAddress");
    Dl_info info{};
    if (gpa1 && dladdr(gpa1, &info)) g_cudaBase = info.dli_fbase;
    addCandidate(reinterpret_cast<void*>(gpa), reinterpret_cast<void*>(&::cuGetProcAddress_v2));
    addCandidate(gpa1, reinterpret_cast<void*>(&::cuGetProcAddress));
    for (size_t i = 1; i < kApiCount; ++i) {
        // The export: also what each wrapper calls (g_real), unless a lookup set it already.
        void* exported = resolveReal(Api(i));
        addCandidate(exported, kWrappers[i]);
        if (!gpa) continue;
        // What cuGetProcAddress hands out for the request this ABI answers: a real driver may give an
        // address that is no export. It keeps its own real pointer in the slot's record; the wrapper
        // calls the export (the same ABI), or this answer when there is none.
        const ApiInfo& a = kApis[i];
        void* answer = nullptr;
        CUdriverProcAddressQueryResult status{};
        const cuuint64_t flags = a.perThread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
        if (gpa(a.base, &answer, a.since, flags, &status) != CUDA_SUCCESS || !answer || isOurs(answer)) continue;
        const Api api = selectAbi(a.base, a.since, flags, answer);
        if (api == Api::None) continue;
        void* expected = nullptr;
        g_real[size_t(api)].compare_exchange_strong(expected, answer, std::memory_order_acq_rel);
        addCandidate(answer, kWrappers[size_t(api)]);
    }
    void* answer = nullptr;
    CUdriverProcAddressQueryResult status{};
    if (gpa && gpa("cuGetProcAddress", &answer, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS)
        addCandidate(answer, reinterpret_cast<void*>(&::cuGetProcAddress_v2));
    sortCandidates();
    return g_candidateCount > 0;
}

// The real pointer behind one of our wrappers, for a slot that already held it when first seen (cudart
// initialised after the attach, through our cuGetProcAddress): what detach puts there.
void* realBehind(void* ours)
{
    for (size_t i = 1; i < kApiCount; ++i)
        if (kWrappers[i] == ours) return g_real[i].load(std::memory_order_acquire);
    for (size_t i = 0; i < g_candidateCount; ++i)
        if (g_candidates[i].ours == ours) return g_candidates[i].real;
    return nullptr;
}

// ---- slots
bool known(void** where)
{
    for (size_t i = 0; i < g_slotCount; ++i)
        if (g_slots[i].where == where) return true;
    return false;
}

// Writes `to` over `from` in one atomic step; a read-only page (RELRO) is made writable around it.
bool swapWord(void** where, void* from, void* to)
{
    const Range* r = mapOf(uintptr_t(where));
    if (!r) return false;
    const uintptr_t page = uintptr_t(where) & ~uintptr_t(4095);
    if (!r->write && mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE) != 0) return false;
    void* expected = from;
    const bool ok = __atomic_compare_exchange_n(where, &expected, to, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    if (!r->write) mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ);
    return ok;
}

size_t takeSlot(void** where, void* original, void* ours, bool alreadyOurs)
{
    if (g_slotCount == kMaxSlots || known(where)) return 0;
    if (!alreadyOurs && !swapWord(where, original, ours)) return 0;
    g_slots[g_slotCount++] = {where, original, ours};
    return 1;
}

// The slots of one object that hold a driver pointer (or, found later, one of ours).
struct ScanState {
    uintptr_t self;  // our own load address
    size_t taken;
};

size_t scanRange(uintptr_t lo, uintptr_t hi)
{
    size_t taken = 0;
    lo = (lo + 7) & ~uintptr_t(7);
    for (uintptr_t a = lo; a + 8 <= hi;) {
        const Range* r = mapOf(a);
        if (!r) {
            a = (a | 4095) + 1;
            continue;
        }
        const uintptr_t end = r->hi < hi ? r->hi : hi;
        for (; a + 8 <= end; a += 8) {
            void** where = reinterpret_cast<void**>(a);
            void* v = __atomic_load_n(where, __ATOMIC_RELAXED);
            if (!v) continue;
            if (void* ours = oursFor(v)) taken += takeSlot(where, v, ours, false);
            else if (isOurs(v) && !known(where))
                if (void* real = realBehind(v)) taken += takeSlot(where, real, v, true);
        }
    }
    return taken;
}

#if defined(__x86_64__)
constexpr unsigned kJumpSlot = R_X86_64_JUMP_SLOT, kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr unsigned kJumpSlot = R_AARCH64_JUMP_SLOT, kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "shim/attach.cpp: the GOT relocation types of this architecture"
#endif

// GOT slots by relocation name: a lazy -lcuda binding still holds its PLT stub's address (no value to
// recognise); putting our wrapper there now is what the lazy binding would do on a preloaded process,
// and detach puts the stub's address back (the next call binds as before).
size_t scanRelocations(const dl_phdr_info* info)
{
    const ElfW(Dyn)* dyn = nullptr;
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) return 0;
    const ElfW(Sym)* symtab = nullptr;
    const char* strtab = nullptr;
    const ElfW(Rela)* rela[2] = {nullptr, nullptr};
    size_t relaSize[2] = {0, 0};
    for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
        // The loader has relocated these to addresses (glibc on x86-64 does, for the dynamic entries).
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = reinterpret_cast<const char*>(d->d_un.d_ptr); break;
        case DT_JMPREL: rela[0] = reinterpret_cast<const ElfW(Rela)*>(d->d_un.d_ptr); break;
        case DT_PLTRELSZ: relaSize[0] = d->d_un.d_val; break;
        case DT_RELA: rela[1] = reinterpret_cast<const ElfW(Rela)*>(d->d_un.d_ptr); break;
        case DT_RELASZ: relaSize[1] = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab) return 0;
    size_t taken = 0;
    for (int t = 0; t < 2; ++t) {
        if (!rela[t]) continue;
        for (size_t k = 0; k < relaSize[t] / sizeof(ElfW(Rela)); ++k) {
            const ElfW(Rela)& r = rela[t][k];
            const unsigned type = ELF64_R_TYPE(r.r_info);
            if (type != kJumpSlot && type != kGlobDat) continue;
            const char* name = strtab + symtab[ELF64_R_SYM(r.r_info)].st_name;
            if (name[0] != 'c' || name[1] != 'u') continue;
            void* ours = nullptr;
            if (strcmp(name, "cuGetProcAddress_v2") == 0) ours = reinterpret_cast<void*>(&::cuGetProcAddress_v2);
            else if (strcmp(name, "cuGetProcAddress") == 0) ours = reinterpret_cast<void*>(&::cuGetProcAddress);
            for (size_t i = 1; !ours && i < kApiCount; ++i)
                if (strcmp(kApis[i].abi, name) == 0) ours = kWrappers[i];
            if (!ours) continue;
            void** where = reinterpret_cast<void**>(info->dlpi_addr + r.r_offset);
            if (known(where) || !mapOf(uintptr_t(where))) continue;
            void* v = __atomic_load_n(where, __ATOMIC_ACQUIRE);
            if (v == ours) continue;
            taken += takeSlot(where, v, ours, false);
        }
    }
    return taken;
}

int scanObject(dl_phdr_info* info, size_t, void* data)
{
    auto* st = static_cast<ScanState*>(data);
    const uintptr_t base = info->dlpi_addr;
    // Never ours, never the driver's own tables (libcuda keeps its exports' addresses everywhere).
    if ((base == st->self && base != 0) || (g_cudaBase && base == uintptr_t(g_cudaBase))) return 0;
    if (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso")) return 0;
    st->taken += scanRelocations(info);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W)) continue;
        st->taken += scanRange(base + ph.p_vaddr, base + ph.p_vaddr + ph.p_memsz);
    }
    return 0;
}

// One pass over every loaded object; the number of slots swapped in this pass.
size_t scanOnce()
{
    if (!collectCandidates()) return 0;
    readMaps();
    Dl_info self{};
    ScanState st{};
    if (dladdr(reinterpret_cast<void*>(&scanOnce), &self)) st.self = uintptr_t(self.dli_fbase);
    dl_iterate_phdr(scanObject, &st);  // holds the loader's lock: no object goes away meanwhile
    return st.taken;
}

size_t restoreSlots()
{
    readMaps();
    size_t restored = 0;
    for (size_t i = 0; i < g_slotCount; ++i)
        if (swapWord(g_slots[i].where, g_slots[i].ours, g_slots[i].original)) ++restored;
    g_slotCount = 0;
    return restored;
}

// ---- options and status
// "key=value" lines: output=PATH, socket=PATH (absolute), status=PATH.
const char* option(const char* from, const char* key, char* out, size_t cap)
{
    const size_t k = strlen(key);
    for (const char* line = from; *line;) {
        const char* end = strchr(line, '\n');
        const size_t len = end ? size_t(end - line) : strlen(line);
        if (len > k && strncmp(line, key, k) == 0 && line[k] == '=' && len - k - 1 < cap) {
            memcpy(out, line + k + 1, len - k - 1);
            out[len - k - 1] = 0;
            return out;
        }
        line += len + (end ? 1 : 0);
    }
    return nullptr;
}

// One line for `gpuspy attach` (which reads it back), replacing the previous one whole (rename).
void statusTo(const char* path, const char* text)
{
    if (!path[0]) return;
    char tmp[kOptionMax + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return;
    const ssize_t w = write(fd, text, strlen(text));
    close(fd);
    if (w == ssize_t(strlen(text))) rename(tmp, path);
}

void status(const char* text) { statusTo(g_statusPath, text); }

void* attachMain(void*)
{
    char value[kOptionMax];
    ++t_depth;  // this thread's driver calls (cuGetProcAddress) are ours, never recorded
    // Where the capture goes: exactly one of the two, whatever the environment said at load.
    settingOverride("GPUSPY_OUTPUT", option(g_options, "output", value, sizeof value) ? value : "");
    settingOverride("GPUSPY_SOCKET", option(g_options, "socket", value, sizeof value) ? value : "");
    pthread_mutex_lock(&g_lock);
    if (!option(g_options, "status", g_statusPath, sizeof g_statusPath)) g_statusPath[0] = 0;
    pthread_mutex_unlock(&g_lock);
    // A process attached before (detached since) starts a new stream.
    resumeRecording();
    g_attachedAtNs.store(nowNs(), std::memory_order_release);
    char line[256];
    --t_depth;
    const bool started = ensureStarted();
    ++t_depth;
    size_t total = started ? scanOnce() : 0;
    snprintf(line, sizeof line, "%s slots=%zu driver=%s\n", started ? "attached" : "failed", total,
             g_candidateCount ? "loaded" : "not-yet");
    status(line);
    uint64_t period = kFirstRescanNs;
    pthread_mutex_lock(&g_lock);
    while (started && !g_detachRequested) {
        timespec until;
        clock_gettime(CLOCK_REALTIME, &until);  // the condition variable's clock
        until.tv_sec += time_t(period / 1000000000ull);
        until.tv_nsec += long(period % 1000000000ull);
        if (until.tv_nsec >= 1000000000l) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000l;
        }
        pthread_cond_timedwait(&g_wake, &g_lock, &until);
        if (g_detachRequested) break;
        pthread_mutex_unlock(&g_lock);
        const size_t found = scanOnce();
        pthread_mutex_lock(&g_lock);
        if (found) {
            total += found;
            snprintf(line, sizeof line, "attached slots=%zu driver=loaded\n", total);
            status(line);
            period = kFirstRescanNs;
        } else if (period < kLastRescanNs) {
            period *= 2;
        }
    }
    pthread_mutex_unlock(&g_lock);
    // Every pointer back first (a call in flight inside a wrapper finishes there), then the stream ends.
    const size_t slots = g_slotCount;
    const size_t restored = restoreSlots();
    stopRecording(kDetachFlushNs, false, 0, StopFor::Detach);
    g_attachedAtNs.store(0, std::memory_order_release);
    snprintf(line, sizeof line, "detached slots=%zu restored=%zu\n", slots, restored);
    pthread_mutex_lock(&g_lock);
    status(line);
    if (strcmp(g_detachStatusPath, g_statusPath) != 0) statusTo(g_detachStatusPath, line);
    g_detachStatusPath[0] = 0;
    g_threadRunning = false;
    g_detachRequested = false;
    pthread_mutex_unlock(&g_lock);
    --t_depth;
    return nullptr;
}

}  // namespace

bool attachedAt(uint64_t* monoNs)
{
    const uint64_t t = g_attachedAtNs.load(std::memory_order_acquire);
    if (monoNs) *monoNs = t;
    return t != 0;
}

}  // namespace gpuspy::shim

using namespace gpuspy::shim;

// Called by `gpuspy attach` on a thread it borrowed (stopped in a restartable wait): copies the
// options and starts the attach thread, nothing else. 0: started; 1: attached already; 2: the process
// has the library preloaded (its wrappers are in place and it records as it was told: nothing to
// swap, and a detach must not undo the preload); -1: failed.
GS_EXPORT int gpuspy_attach(const char* options)
{
    const int savedErrno = errno;
    int rc = 0;
    // Preloaded (or loaded global): the program's own scope finds us; an attach's dlopen is local.
    // (Not RTLD_DEFAULT: asked from here, that scope includes our own local one.)
    DlsymFn dl = realDlsym();
    void* program = dlopen(nullptr, RTLD_LAZY);
    const bool global = dl && program && dl(program, "gpuspy_attach") != nullptr;
    pthread_mutex_lock(&g_lock);
    if (global) {
        rc = 2;
    } else if (g_threadRunning) {
        rc = 1;
    } else if (!options || strlen(options) >= kOptionMax) {
        rc = -1;
    } else {
        strcpy(g_options, options);
        g_detachRequested = false;
        pthread_t thread;
        if (startOwnThread(&thread, attachMain)) {
            g_threadRunning = true;
            pthread_setname_np(thread, "gpuspy-attach");
        } else {
            rc = -1;
        }
    }
    pthread_mutex_unlock(&g_lock);
    errno = savedErrno;
    return rc;
}

// Asks the attach thread to put every pointer back and end the stream; returns at once. `options`:
// "status=PATH", where the end is told too. 0: asked; 1: not attached.
GS_EXPORT int gpuspy_detach(const char* options)
{
    const int savedErrno = errno;
    pthread_mutex_lock(&g_lock);
    const int rc = g_threadRunning && !g_detachRequested ? 0 : 1;
    if (rc == 0) {
        if (options && strlen(options) < kOptionMax) {
            if (!option(options, "status", g_detachStatusPath, sizeof g_detachStatusPath)) g_detachStatusPath[0] = 0;
        }
        g_detachRequested = true;
        pthread_cond_signal(&g_wake);
    }
    pthread_mutex_unlock(&g_lock);
    errno = savedErrno;
    return rc;
}
