// shim/stack_cache.cpp: the stack cache. Each thread keeps its last few unwinds (kEntries): the
// frames unw_backtrace gave, and the stack words that unwind read, each with its address. A capture
// whose stackCapture frame lies where a cached one did, and whose stack still holds every one of
// those words, gets that unwind's frames without unwinding: a compare a word (1-2 a frame), against
// unw_backtrace's ~10 ns a frame (GPUSPY_STACK_CACHE=0 turns it off).
//
// Why a match is exactly what unw_backtrace would give now. libunwind's x86-64 unwind of a frame is
// a function of the frame's ip, the registers its CFA and saved-register rules read, and the memory
// those rules read. The cache is only used where every frame's rule is one whose inputs are known,
// read here from the frame's own FDE in .eh_frame (through .eh_frame_hdr; a small interpreter of the
// CFA program, ruleFor below):
//   CFA = rsp + c or rbp + c;  return address saved at CFA - 8;  rbp unchanged or saved at CFA + d.
// The rule is the same for the row at ra - 1 (the call, which libunwind looks up for a return
// address) and at ra (so whichever row libunwind takes, it is this one), and both lie in one FDE.
// Stepping such a frame (ip, rsp, rbp) reads exactly two words, [CFA - 8] and, when saved, [CFA + d],
// and gives (ip', rsp', rbp') = ([CFA-8], CFA, [CFA+d] or rbp): no other register, no other memory.
// The walk starts in stackCapture, built with frame pointers: its frame's rule (checked the same way
// at the ip unw_backtrace returns to) is CFA = rbp + 16, so the unwind from there is a function of
// rbp (the frame record, __builtin_frame_address(0)) and the words read. A saved rbp that no later
// frame's CFA reads before rbp is restored again changes no ip nor CFA: it is read but not compared
// (code without frame pointers keeps a loop's variables in rbp). By induction on the frames:
// if rbp and every word read (at the same addresses, which follow from the words before) are what
// they were when the entry was learnt, each frame's (ip, rsp, rbp) is what it was, so unw_backtrace
// gives the same ips. Its end too: an entry is learnt only when unw_backtrace stopped at its limit
// (the same limit is part of the key) or at a frame whose rule says the return address is undefined
// (_start, clone: libunwind stops there having read nothing more); a walk that ended any other way
// (no FDE, unreadable memory) is not learnt. When learning, this walk, done from the rules, must
// give unw_backtrace's own ips, frame for frame, or nothing is learnt.
// Bypassed (never learnt; unw_backtrace as without the cache): a CFA from an expression
// (DW_CFA_def_cfa_expression: realigned frames read it from memory elsewhere) or from any register
// but rsp/rbp; a return address not at CFA - 8; rbp restored by anything but an offset from the CFA;
// a signal frame (the FDE's 'S' augmentation, or the sigreturn trampoline's bytes at the ip, which
// libunwind recognises without the FDE): a handler's stack is always unwound in full; a return
// address with no FDE or an FDE this interpreter does not read (64-bit lengths, DW_CFA_set_loc,
// unknown opcodes or augmentations); a word outside this thread's stack above the capture's frame
// (an alternate signal stack, a fiber), or CFAs not strictly outwards; more than kMaxCachedFrames.
// What remains, as for the frame-pointer path: the rules are cached by address and not forgotten when
// a library is unloaded, so code mapped later at the same addresses with other unwind rules could make
// an entry wrong; and the argument takes libunwind to follow the FDE's rules for these frames (its
// fast trace caches the same rule per ip), which is what its full walk is.
//
// Memory: the rule table (kRules entries, 64 KiB, shared, made resident when configured); per thread
// one block of kEntries entries (about 10 KiB), mapped on the thread's first learning and unmapped
// when the thread exits.
#include "shim/stack_cache.h"

#include "shim/shim.h"

#include <atomic>
#include <cstring>

#include <link.h>
#include <pthread.h>
#include <sys/mman.h>

namespace gpuspy::shim {

namespace {

constexpr uint32_t kEntries = 4;
constexpr uint32_t kMaxCachedFrames = 64;  // ips after stackCapture's (the default capture asks 24 + skip + 2)
constexpr uint32_t kRules = 4096;          // power of two

enum : int { kBypass = 0, kStandard = 1, kEnd = 2 };

struct Check {
    uint64_t slot;
    uint64_t value;
};

struct Entry {
    uint64_t frame;  // stackCapture's frame record; 0 = empty
    uint32_t params, limit;
    uint32_t count;   // ips in pcs
    uint32_t checks;  // words in check
    uint32_t id, nativeId;
    uint64_t pcs[kMaxCachedFrames];
    Check check[2 * (kMaxCachedFrames + 1)];
};

struct ThreadCache {
    Entry entries[kEntries];
    uint32_t next;  // round robin
};

struct RuleSlot {
    std::atomic<uint64_t> key;    // ra; 0 = empty
    std::atomic<uint64_t> value;  // packed rule | kValid; 0 = being written
};

constexpr uint64_t kValid = 1ull << 63;

// Zero-initialised: no constructors run.
std::atomic<bool> g_on{false};
RuleSlot* g_rules = nullptr;
std::atomic<uint32_t> g_ruleCount{0};
pthread_key_t g_key;
bool g_keyMade = false;

thread_local ThreadCache* t_cache GS_TLS = nullptr;
thread_local StackCacheStats t_stats GS_TLS;

struct StackBounds {
    uintptr_t lo, hi;
    bool read, known;
};
thread_local StackBounds t_bounds GS_TLS;

bool threadStack(uintptr_t* lo, uintptr_t* hi)
{
    if (!t_bounds.read) {
        t_bounds.read = true;
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void* addr = nullptr;
            size_t size = 0;
            if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size >= 64) {
                t_bounds.lo = reinterpret_cast<uintptr_t>(addr);
                t_bounds.hi = t_bounds.lo + size;
                t_bounds.known = true;
            }
            pthread_attr_destroy(&attr);
        }
    }
    *lo = t_bounds.lo;
    *hi = t_bounds.hi;
    return t_bounds.known;
}

// At thread exit (the key's destructor, on the exiting thread): a capture from a later destructor
// finds no cache and starts another (registered again; past the destructor rounds it is left).
void freeCache(void* p)
{
    if (t_cache == p) t_cache = nullptr;
    if (p) munmap(p, sizeof(ThreadCache));
}

// ---- .eh_frame ----------------------------------------------------------------------------------

struct Reader {
    const uint8_t* p;
    const uint8_t* end;
    bool ok = true;
    uint8_t u8()
    {
        if (p >= end) return ok = false, 0;
        return *p++;
    }
    uint64_t fixed(unsigned n)
    {
        if (uint64_t(end - p) < n) return ok = false, 0;
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        p += n;
        return v;
    }
    uint64_t uleb()
    {
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            const uint8_t b = u8();
            if (!ok) return 0;
            v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        ok = false;
        return 0;
    }
    int64_t sleb()
    {
        int64_t v = 0;
        unsigned shift = 0;
        uint8_t b = 0;
        do {
            b = u8();
            if (!ok || shift >= 64) return ok = false, 0;
            v |= int64_t(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40)) v |= -(int64_t(1) << shift);
        return v;
    }
    // A DW_EH_PE-encoded pointer: absolute or pc-relative, of a fixed size; anything else fails.
    uint64_t pointer(uint8_t enc)
    {
        if (enc == 0xff) return ok = false, 0;  // omit
        const uint64_t at = reinterpret_cast<uint64_t>(p);
        uint64_t v = 0;
        switch (enc & 0x0f) {
        case 0x00: v = fixed(8); break;
        case 0x02: v = fixed(2); break;
        case 0x03: v = fixed(4); break;
        case 0x04: v = fixed(8); break;
        case 0x0a: v = uint64_t(int64_t(int16_t(fixed(2)))); break;
        case 0x0b: v = uint64_t(int64_t(int32_t(fixed(4)))); break;
        case 0x0c: v = fixed(8); break;
        default: return ok = false, 0;
        }
        switch (enc & 0x70) {
        case 0x00: break;
        case 0x10: v += at; break;
        default: return ok = false, 0;
        }
        if (enc & 0x80) return ok = false, 0;  // indirect
        return v;
    }
};

// Bytes of a DW_EH_PE-encoded value of fixed size; 0 for any other.
unsigned encodedSize(uint8_t enc)
{
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: return 8;
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    default: return 0;
    }
}

struct FindHdr {
    uint64_t pc;
    const uint8_t* hdr;
    uint64_t segmentEnd;  // the end of the loaded segment holding pc
};

int findHdr(dl_phdr_info* info, size_t, void* arg)
{
    auto* f = static_cast<FindHdr*>(arg);
    bool inside = false;
    const uint8_t* hdr = nullptr;
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD && f->pc >= lo && f->pc < lo + ph.p_memsz) {
            inside = true;
            f->segmentEnd = lo + ph.p_memsz;
        }
        if (ph.p_type == PT_GNU_EH_FRAME) hdr = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    }
    if (!inside) return 0;
    f->hdr = hdr;
    return 1;
}

// The FDE covering pc (through the module's sorted .eh_frame_hdr table); nullptr when none, or the
// table is not in the usual encoding.
const uint8_t* findFde(uint64_t pc, uint64_t* segmentEnd)
{
    FindHdr f{pc, nullptr, 0};
    dl_iterate_phdr(findHdr, &f);
    const uint8_t* hdr = f.hdr;
    *segmentEnd = f.segmentEnd;
    if (!hdr || hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b) return nullptr;  // udata4 count, datarel sdata4 table
    Reader r{hdr + 4, hdr + 64};
    r.pointer(hdr[1]);  // eh_frame_ptr
    if (!r.ok) return nullptr;
    uint32_t count = 0;
    std::memcpy(&count, r.p, 4);
    const uint8_t* table = r.p + 4;
    const int64_t want = int64_t(pc - reinterpret_cast<uint64_t>(hdr));
    uint32_t lo = 0, hi = count;  // the last entry whose start <= pc
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        int32_t start = 0;
        std::memcpy(&start, table + 8 * size_t(mid), 4);
        if (start <= want) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return nullptr;
    int32_t fde = 0;
    std::memcpy(&fde, table + 8 * size_t(lo - 1) + 4, 4);
    return hdr + fde;
}

// One register's rule, for the two that matter here: rbp (6) and the return address (16).
enum : uint8_t { kSame, kUndefined, kOffset, kOther };
struct RegRule {
    uint8_t kind;
    int64_t off;
};
struct Row {
    uint64_t cfaReg;
    int64_t cfaOff;
    bool cfaExpr;
    RegRule rbp, ra;
};

void setRule(Row& row, uint64_t reg, RegRule rule)
{
    if (reg == 6) row.rbp = rule;
    else if (reg == 16) row.ra = rule;
}

// Runs a CFA program (the CIE's initial instructions, or an FDE's), applying rows up to target
// (loc starts at the FDE's start). False: an opcode this does not read.
bool runCfa(Reader r, Row& row, const Row& initial, uint64_t& loc, uint64_t target, uint64_t codeAlign,
            int64_t dataAlign)
{
    Row stack[8];
    unsigned depth = 0;
    while (r.ok && r.p < r.end) {
        const uint8_t op = r.u8();
        uint64_t delta = 0;
        switch (op >> 6) {
        case 1: delta = op & 0x3f; goto advance;
        case 2: setRule(row, op & 0x3f, {kOffset, int64_t(r.uleb()) * dataAlign}); continue;
        case 3: {
            const unsigned reg = op & 0x3f;
            if (reg == 6) row.rbp = initial.rbp;
            else if (reg == 16) row.ra = initial.ra;
            continue;
        }
        default: break;
        }
        switch (op) {
        case 0x00: break;
        case 0x02: delta = r.fixed(1); goto advance;
        case 0x03: delta = r.fixed(2); goto advance;
        case 0x04: delta = r.fixed(4); goto advance;
        case 0x05: { const uint64_t reg = r.uleb(); setRule(row, reg, {kOffset, int64_t(r.uleb()) * dataAlign}); break; }
        case 0x06: { const uint64_t reg = r.uleb(); if (reg == 6) row.rbp = initial.rbp; else if (reg == 16) row.ra = initial.ra; break; }
        case 0x07: setRule(row, r.uleb(), {kUndefined, 0}); break;
        case 0x08: setRule(row, r.uleb(), {kSame, 0}); break;
        case 0x09: { const uint64_t reg = r.uleb(); r.uleb(); setRule(row, reg, {kOther, 0}); break; }
        case 0x0a: if (depth == 8) return false; stack[depth++] = row; break;
        case 0x0b: {
            if (depth == 0) return false;
            // The CFA rule comes back with the registers' (libgcc and libunwind keep it in the saved
            // state; compilers emit remember/restore around an epilogue expecting it).
            row = stack[--depth];
            break;
        }
        case 0x0c: row.cfaReg = r.uleb(); row.cfaOff = int64_t(r.uleb()); row.cfaExpr = false; break;
        case 0x0d: row.cfaReg = r.uleb(); row.cfaExpr = false; break;
        case 0x0e: row.cfaOff = int64_t(r.uleb()); break;
        case 0x0f: { const uint64_t n = r.uleb(); if (uint64_t(r.end - r.p) < n) return false; r.p += n; row.cfaExpr = true; break; }
        case 0x10:
        case 0x16: {
            const uint64_t reg = r.uleb();
            const uint64_t n = r.uleb();
            if (uint64_t(r.end - r.p) < n) return false;
            r.p += n;
            setRule(row, reg, {kOther, 0});
            break;
        }
        case 0x11: { const uint64_t reg = r.uleb(); setRule(row, reg, {kOffset, r.sleb() * dataAlign}); break; }
        case 0x12: row.cfaReg = r.uleb(); row.cfaOff = r.sleb() * dataAlign; row.cfaExpr = false; break;
        case 0x13: row.cfaOff = r.sleb() * dataAlign; break;
        case 0x14: { const uint64_t reg = r.uleb(); r.uleb(); setRule(row, reg, {kOther, 0}); break; }
        case 0x15: { const uint64_t reg = r.uleb(); r.sleb(); setRule(row, reg, {kOther, 0}); break; }
        case 0x2e: r.uleb(); break;
        case 0x2f: { const uint64_t reg = r.uleb(); setRule(row, reg, {kOffset, -int64_t(r.uleb()) * dataAlign}); break; }
        default: return false;  // DW_CFA_set_loc and anything unknown
        }
        continue;
    advance:
        if (!r.ok) return false;
        loc += delta * codeAlign;
        if (loc > target) return true;
    }
    return r.ok;
}

// The row in effect at target, from the FDE; false when it cannot be read. *signal: the CIE says
// signal frame. [*start, *end): the FDE's range.
bool rowAt(const uint8_t* fde, uint64_t target, Row& row, bool* signal, uint64_t* start, uint64_t* end)
{
    uint32_t len = 0;
    std::memcpy(&len, fde, 4);
    if (len == 0 || len == 0xffffffffu) return false;
    Reader f{fde + 4, fde + 4 + len};
    const uint8_t* idField = f.p;
    const uint32_t ciePtr = uint32_t(f.fixed(4));
    if (ciePtr == 0) return false;  // a CIE, not an FDE
    const uint8_t* cie = idField - ciePtr;
    uint32_t cieLen = 0;
    std::memcpy(&cieLen, cie, 4);
    if (cieLen == 0 || cieLen == 0xffffffffu) return false;
    Reader c{cie + 4, cie + 4 + cieLen};
    if (c.fixed(4) != 0) return false;
    const uint8_t version = c.u8();
    if (version != 1 && version != 3) return false;
    const char* aug = reinterpret_cast<const char*>(c.p);
    const size_t augLen = strnlen(aug, size_t(c.end - c.p));
    c.p += augLen + 1;
    const uint64_t codeAlign = c.uleb();
    const int64_t dataAlign = c.sleb();
    const uint64_t raReg = version == 1 ? c.u8() : c.uleb();
    if (!c.ok || raReg != 16) return false;
    uint8_t fdeEnc = 0;
    bool z = false;
    *signal = false;
    if (augLen > 0) {
        if (aug[0] != 'z') return false;
        z = true;
        const uint64_t n = c.uleb();
        const uint8_t* augEnd = c.p + n;
        if (!c.ok || augEnd > c.end) return false;
        for (size_t i = 1; i < augLen; ++i) {
            switch (aug[i]) {
            case 'R': fdeEnc = c.u8(); break;
            case 'L': c.u8(); break;
            case 'P': {
                const unsigned size = encodedSize(c.u8());
                if (size == 0) return false;
                c.fixed(size);
                break;
            }
            case 'S': *signal = true; break;
            default: return false;
            }
        }
        if (!c.ok) return false;
        c.p = augEnd;
    }
    *start = f.pointer(fdeEnc);
    *end = *start + f.pointer(fdeEnc & 0x0f);
    if (z) {
        const uint64_t n = f.uleb();
        if (!f.ok || uint64_t(f.end - f.p) < n) return false;
        f.p += n;
    }
    if (!f.ok || target < *start || target >= *end) return false;
    Row initial{7, 8, false, {kSame, 0}, {kUndefined, 0}};
    uint64_t loc = *start;
    row = initial;
    if (!runCfa(c, row, initial, loc, ~0ull, codeAlign, dataAlign)) return false;  // no advances in a CIE
    initial = row;
    loc = *start;
    return runCfa(f, row, initial, loc, target, codeAlign, dataAlign);
}

ScRule classify(uint64_t ra)
{
    ScRule out{kBypass, 0, 0, 0};
    // libunwind's own test for the sigreturn trampoline: mov $15, %rax; syscall at the ip.
    static constexpr uint8_t kSigreturn[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    uint64_t segmentEnd = 0;
    const uint8_t* fde = findFde(ra - 1, &segmentEnd);
    if (!fde) return out;
    Row before{}, at{};
    bool signal = false;
    uint64_t start = 0, end = 0;
    if (!rowAt(fde, ra - 1, before, &signal, &start, &end) || signal) return out;
    if (ra >= end) return out;  // a call that ends its function: ra lies in the next one
    if (!rowAt(fde, ra, at, &signal, &start, &end)) return out;
    // (The bytes are read where libunwind reads them, past the function's end if need be, inside its
    // loaded segment; a return address too near the segment's end is not decided.)
    if (ra + sizeof kSigreturn > segmentEnd || std::memcmp(reinterpret_cast<const void*>(ra), kSigreturn, sizeof kSigreturn) == 0)
        return out;
    auto same = [](const RegRule& a, const RegRule& b) { return a.kind == b.kind && a.off == b.off; };
    if (before.cfaExpr || at.cfaExpr || before.cfaReg != at.cfaReg || before.cfaOff != at.cfaOff ||
        !same(before.rbp, at.rbp) || !same(before.ra, at.ra))
        return out;
    if (before.ra.kind == kUndefined) {
        out.kind = kEnd;
        return out;
    }
    if (before.ra.kind != kOffset || before.ra.off != -8) return out;
    if (before.cfaReg != 6 && before.cfaReg != 7) return out;
    if (before.cfaOff < 16 || before.cfaOff > (1 << 24) || (before.cfaOff & 7)) return out;
    int rbpOff = 0;
    if (before.rbp.kind == kOffset) {
        if (before.rbp.off >= -8 || before.rbp.off < -(1 << 14) || (before.rbp.off & 7)) return out;
        rbpOff = int(before.rbp.off);
    } else if (before.rbp.kind != kSame) {
        return out;
    }
    out = {kStandard, int(before.cfaReg), int(before.cfaOff), rbpOff};
    return out;
}

uint64_t pack(const ScRule& r)
{
    return kValid | uint64_t(uint32_t(r.kind)) << 56 | uint64_t(r.cfaReg == 6) << 55 |
           uint64_t(uint16_t(int16_t(r.rbpOff))) << 32 | uint32_t(r.cfaOff);
}

ScRule unpack(uint64_t v)
{
    return {int((v >> 56) & 0x3f), (v >> 55) & 1 ? 6 : 7, int(uint32_t(v)), int(int16_t(uint16_t(v >> 32)))};
}

// The rule for ra, from the shared table, or classified now (and stored when there is room).
ScRule ruleFor(uint64_t ra)
{
    if (!g_rules) return classify(ra);
    uint32_t h = uint32_t((ra * 0x9e3779b97f4a7c15ull) >> 40) & (kRules - 1);
    for (uint32_t probe = 0; probe < 16; ++probe, h = (h + 1) & (kRules - 1)) {
        RuleSlot& s = g_rules[h];
        uint64_t key = s.key.load(std::memory_order_acquire);
        if (key == ra) {
            const uint64_t v = s.value.load(std::memory_order_acquire);
            return v ? unpack(v) : classify(ra);
        }
        if (key != 0) continue;
        if (g_ruleCount.load(std::memory_order_relaxed) >= kRules / 2) return classify(ra);
        const ScRule rule = classify(ra);
        if (s.key.compare_exchange_strong(key, ra, std::memory_order_acq_rel)) {
            g_ruleCount.fetch_add(1, std::memory_order_relaxed);
            s.value.store(pack(rule), std::memory_order_release);
        }
        return rule;
    }
    return classify(ra);
}

inline uint64_t load(uint64_t slot) { return *reinterpret_cast<const uint64_t*>(slot); }

}  // namespace

void scConfigure(bool on)
{
    if (on && !g_rules) {
        void* p = mmap(nullptr, kRules * sizeof(RuleSlot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                       -1, 0);
        if (p == MAP_FAILED) on = false;
        else g_rules = static_cast<RuleSlot*>(p);
    }
    if (on && !g_keyMade) {
        if (pthread_key_create(&g_key, freeCache) == 0) g_keyMade = true;
        else on = false;
    }
    g_on.store(on, std::memory_order_release);
}

bool scEnabled() { return g_on.load(std::memory_order_relaxed); }

bool scLookup(uintptr_t frame, uint32_t params, uint32_t limit, const uint64_t** pcs, uint32_t* n, uint32_t* id,
              uint32_t* nativeId)
{
    ThreadCache* tc = t_cache;
    if (!tc) {
        ++t_stats.misses;
        return false;
    }
    for (Entry& e : tc->entries) {
        if (e.frame != frame || e.params != params || e.limit != limit) continue;
        const Check* c = e.check;
        const Check* const end = c + e.checks;
        while (c != end && load(c->slot) == c->value) ++c;
        if (c != end) continue;
        *pcs = e.pcs;
        *n = e.count;
        *id = e.id;
        *nativeId = e.nativeId;
        ++t_stats.hits;
        return true;
    }
    ++t_stats.misses;
    return false;
}

void scLearn(uintptr_t frame, uint32_t params, uint32_t limit, const uint64_t* buf, uint32_t count, uint32_t id,
             uint32_t nativeId)
{
    if (count < 2 || count > limit + 1 || limit > kMaxCachedFrames || id == 0) {
        ++t_stats.bypassed;
        return;
    }
    uintptr_t lo = 0, hi = 0;
    if (!threadStack(&lo, &hi) || frame < lo || frame + 16 > hi || (frame & 7)) {
        ++t_stats.bypassed;
        return;
    }
    Entry e;
    e.frame = frame;
    e.params = params;
    e.limit = limit;
    e.count = count - 1;
    e.checks = 0;
    e.id = id;
    e.nativeId = nativeId;
    // Frame j's state: ip = buf[j], rsp, rbp. Frame 0 is stackCapture's: only rbp is known, and its
    // rule must say CFA = rbp + 16.
    uint64_t ip = buf[0], rsp = 0, rbp = frame;
    uint64_t floor = frame;  // every word read lies at or above it, strictly outwards
    struct Step {
        uint64_t raSlot, ra, rbpSlot, rbp;
        bool cfaFromRbp;
    };
    Step steps[kMaxCachedFrames + 1];
    uint32_t nSteps = 0;
    for (uint32_t j = 0; j < count; ++j) {
        const ScRule rule = ruleFor(ip);
        const bool last = j + 1 == count;
        if (last) {
            // unw_backtrace stopped at its limit, or at an undefined return address.
            if (count == limit + 1 || rule.kind == kEnd) break;
            ++t_stats.bypassed;
            return;
        }
        if (rule.kind != kStandard || (j == 0 && (rule.cfaReg != 6 || rule.cfaOff != 16))) {
            ++t_stats.bypassed;
            return;
        }
        const uint64_t cfa = (rule.cfaReg == 6 ? rbp : rsp) + uint64_t(int64_t(rule.cfaOff));
        const uint64_t raSlot = cfa - 8;
        const uint64_t rbpSlot = rule.rbpOff ? cfa + uint64_t(int64_t(rule.rbpOff)) : 0;
        if (cfa <= floor || cfa > hi || (cfa & 7) || (rbpSlot && (rbpSlot < floor || rbpSlot + 8 > hi))) {
            ++t_stats.bypassed;
            return;
        }
        const uint64_t nextIp = load(raSlot);
        if (nextIp != buf[j + 1]) {  // this walk is not libunwind's: learn nothing
            ++t_stats.bypassed;
            return;
        }
        Step& st = steps[nSteps++];
        st = {raSlot, nextIp, rbpSlot, 0, rule.cfaReg == 6};
        if (rbpSlot) rbp = st.rbp = load(rbpSlot);
        rsp = cfa;
        floor = cfa;
        ip = nextIp;
    }
    // A restored rbp matters only where a later frame's CFA is computed from it before another frame
    // restores rbp again (code built without frame pointers keeps other values in rbp, which change
    // from call to call): those words are left unchecked, as no later step reads them.
    bool used = false;  // the rbp after step j is read by a later step
    for (uint32_t j = nSteps; j-- > 0;) {
        if (steps[j].rbpSlot) {
            if (!used) steps[j].rbpSlot = 0;
            used = steps[j].cfaFromRbp;
        } else {
            used = used || steps[j].cfaFromRbp;
        }
    }
    for (uint32_t j = 0; j < nSteps; ++j) {
        e.check[e.checks++] = {steps[j].raSlot, steps[j].ra};
        if (steps[j].rbpSlot) e.check[e.checks++] = {steps[j].rbpSlot, steps[j].rbp};
    }
    std::memcpy(e.pcs, buf + 1, sizeof(uint64_t) * e.count);
    ThreadCache* tc = t_cache;
    if (!tc) {
        void* p = mmap(nullptr, sizeof(ThreadCache), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            ++t_stats.bypassed;
            return;
        }
        tc = t_cache = static_cast<ThreadCache*>(p);
        if (g_keyMade) pthread_setspecific(g_key, p);
    }
    Entry& slot = tc->entries[tc->next];
    tc->next = (tc->next + 1) % kEntries;
    std::memcpy(&slot, &e, offsetof(Entry, pcs) + sizeof(uint64_t) * e.count);
    std::memcpy(slot.check, e.check, sizeof(Check) * e.checks);
    ++t_stats.learnt;
}

void scForgetThread()
{
    if (t_cache) std::memset(t_cache, 0, sizeof(ThreadCache));
}

StackCacheStats scThreadStats()
{
    StackCacheStats s = t_stats;
    s.rules = g_ruleCount.load(std::memory_order_relaxed);
    return s;
}

ScRule scRuleFor(uint64_t ra) { return ruleFor(ra); }

}  // namespace gpuspy::shim
