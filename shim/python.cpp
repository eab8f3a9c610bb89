// shim/python.cpp: reads the calling thread's CPython frame chain from inside a CUDA hook, interns
// each frame as (code object, instruction offset) -> id, resolves a new one's function, file and line
// once, and sends PyCodeDef/PyFrameDef records ahead of the stacks that use them.
//
// Safety. Nothing here calls the Python API (but Py_GetVersion, once, at load on 3.9/3.10): an API call
// can allocate, raise, take the GIL or run a finalizer, inside a hook. The thread state comes from the
// interpreter's own TLS slot (PyGILState_GetThisThreadState: pthread_getspecific, nothing else); the
// frames are read by their known layout (only versions with a row in shim/python_layouts.h, chosen on
// the interpreter's exact minor version; any other runs native-only). Reading them is safe whether or
// not the thread holds the GIL: they are this thread's own frames, the ones that are
// executing the call we are inside of, and only this thread pushes or pops them; the code objects
// are held by those frames, and their names, file names and line tables are immutable. (ctypes
// releases the GIL around every foreign call: requiring it would leave the commonest path without
// Python frames.) What is never done without the GIL: writing to any Python object; reading a
// string's UTF-8 cache (another thread may be filling it): names are transcoded from the canonical
// data. Every pointer is checked before it is followed (user-space range, alignment) and every code
// object, string and bytes object by its type pointer; a failed check ends the chain there (counted).
//
// Identity. A code object can be freed and its address reused by another one. So a code entry keeps,
// besides the address, the name, file and line table pointers and first line it was interned with;
// a code object at a known address that differs in any of them is a new code object. (A new one equal
// in all of them is the same function of the same source.)
//
// Memory, reserved on first use: code entries 1.25 MiB, their names 2 MiB, frame slots 2 MiB and
// frame entries 0.75 MiB, touched as they fill; 1.5 KiB a thread (its last frames). Inserts take one
// mutex (lookups take none), rare: once per new code object or new (code, offset).
#include "shim/python.h"

#include "shim/python_layouts.h"
#include "shim/python_lines.h"
#include "shim/shim.h"
#include "wire/codec.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace gpuspy::shim {

namespace {

// Offsets into the interpreter's structs, by minor version: shim/python_layouts.h (checked against each
// version's headers by report.python.layout.3.N).
using Layout = GpuspyPyLayout;
constexpr uint32_t kNone = GPUSPY_PY_NONE;
constexpr uint32_t kObType = GPUSPY_PY_OB_TYPE;
constexpr uint32_t kBytesSize = GPUSPY_PY_BYTES_SIZE, kBytesData = GPUSPY_PY_BYTES_DATA;
constexpr uint32_t kStrLength = GPUSPY_PY_STR_LENGTH;

constexpr uint32_t kMaxPyFrames = 64;  // per capture
constexpr uint32_t kCodeSlots = 1u << 15, kMaxCodes = 1u << 14;
constexpr uint32_t kFrameSlots = 1u << 17, kMaxFrames = 1u << 16;
constexpr uint32_t kNameBytes = 2u << 20;
constexpr uint32_t kMaxName = 1024;  // a longer function or file name is cut

using TstateFn = void* (*)();

struct CodeEntry {
    std::atomic<uint64_t> code;  // 0 = free; written last
    uint64_t name, file, linetable;
    int32_t firstLine;
    uint32_t codeId;
};
struct CodeDef {
    uint32_t textOffset, textLength;  // "function\0file" in g_names
    int32_t firstLine;
};
struct FrameSlot {
    std::atomic<uint64_t> key;  // codeId << 32 | (lasti + 1); 0 = free; written last
    uint32_t frameId;
    uint32_t pad;
};
struct FrameDef {
    uint32_t codeId;
    int32_t line, lasti;
};

// Zero-initialised; set by pythonConfigure before any capture.
bool g_active = false;
bool g_hintOn = false;  // GPUSPY_PYTHON_HINT: pythonNativeHint answers
const Layout* g_layout = nullptr;
TstateFn g_ownTstate = nullptr, g_currentTstate = nullptr;
uint64_t g_codeType = 0, g_strType = 0, g_bytesType = 0;
uint64_t g_evalLo = 0, g_evalHi = 0;
uint64_t g_interpLo = 0, g_interpHi = 0;  // the executable segment holding the eval loop
CodeEntry* g_codeSlots = nullptr;
CodeDef* g_codes = nullptr;  // by codeId - 1
char* g_names = nullptr;
FrameSlot* g_frameSlots = nullptr;
FrameDef* g_frames = nullptr;  // by frameId - 1
uint32_t g_nameUsed = 0;
std::atomic<uint32_t> g_codeCount{0}, g_frameCount{0};  // published: defs below are complete
uint32_t g_drainCode = 0, g_drainFrame = 0;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint64_t> g_badFrames{0};  // rare; the per-capture counts are each thread's (PythonMemo)

inline bool plausible(uint64_t p) { return p >= 4096 && p < (1ull << 47) && (p & 7) == 0; }

template <class T>
inline T at(uint64_t base, uint32_t offset)
{
    T v;
    std::memcpy(&v, reinterpret_cast<const void*>(base + offset), sizeof v);
    return v;
}

inline bool isA(uint64_t object, uint64_t type) { return plausible(object) && at<uint64_t>(object, kObType) == type; }

inline uint64_t mix(uint64_t v)
{
    v = (v ^ (v >> 33)) * 0xff51afd7ed558ccdull;
    return v ^ (v >> 29);
}

// A str object as UTF-8 into out (at most cap - 1 bytes, cut at a character); its length. Compact
// strings only (every identifier and file name the compiler makes); "?" otherwise.
uint32_t utf8Of(uint64_t str, char* out, uint32_t cap)
{
    if (!isA(str, g_strType)) {
        out[0] = '?';
        return 1;
    }
    const uint64_t length = at<uint64_t>(str, kStrLength);
    const uint32_t state = at<uint32_t>(str, g_layout->strState);
    const uint32_t kind = (state >> 2) & 7;
    const bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4)) {
        out[0] = '?';
        return 1;
    }
    const uint64_t data = str + (ascii ? g_layout->strAsciiData : g_layout->strCompactData);
    uint32_t n = 0;
    for (uint64_t i = 0; i < length; ++i) {
        uint32_t c = kind == 1 ? at<uint8_t>(data, uint32_t(i)) : kind == 2 ? at<uint16_t>(data, uint32_t(2 * i)) : at<uint32_t>(data, uint32_t(4 * i));
        char enc[4];
        uint32_t k;
        if (c < 0x80) enc[0] = char(c), k = 1;
        else if (c < 0x800) enc[0] = char(0xc0 | c >> 6), enc[1] = char(0x80 | (c & 0x3f)), k = 2;
        else if (c < 0x10000) enc[0] = char(0xe0 | c >> 12), enc[1] = char(0x80 | ((c >> 6) & 0x3f)), enc[2] = char(0x80 | (c & 0x3f)), k = 3;
        else enc[0] = char(0xf0 | c >> 18), enc[1] = char(0x80 | ((c >> 12) & 0x3f)), enc[2] = char(0x80 | ((c >> 6) & 0x3f)), enc[3] = char(0x80 | (c & 0x3f)), k = 4;
        if (n + k >= cap) break;
        std::memcpy(out + n, enc, k);
        n += k;
    }
    return n;
}

// The line of code unit lasti (the first line for lasti < 0) by the code's line table, a checked bytes
// object.
int32_t lineOf(uint64_t linetable, int32_t firstLine, int32_t lasti)
{
    if (lasti < 0) return firstLine;
    const int64_t size = at<int64_t>(linetable, kBytesSize);
    if (size <= 0 || size > (1 << 24)) return -1;
    return pyLineOf(g_layout->lines, reinterpret_cast<const uint8_t*>(linetable + kBytesData), uint64_t(size), firstLine, lasti);
}

// Under g_lock: a new code entry and its definition; 0 when full.
uint32_t newCode(uint64_t code, uint64_t name, uint64_t file, uint64_t linetable, int32_t firstLine, uint32_t slot)
{
    const uint32_t count = g_codeCount.load(std::memory_order_relaxed);
    if (count >= kMaxCodes || g_nameUsed + 2 * kMaxName > kNameBytes) return 0;
    char* text = g_names + g_nameUsed;
    uint32_t n = utf8Of(name, text, kMaxName);
    text[n++] = 0;
    n += utf8Of(file, text + n, kMaxName);
    g_codes[count] = CodeDef{g_nameUsed, n, firstLine};
    g_nameUsed += n;
    CodeEntry& e = g_codeSlots[slot];
    e.name = name;
    e.file = file;
    e.linetable = linetable;
    e.firstLine = firstLine;
    e.codeId = count + 1;
    e.code.store(code, std::memory_order_release);
    g_codeCount.store(count + 1, std::memory_order_release);
    return count + 1;
}

// Looks code up in the code slots (with the entry's name, file, line table and first line); with
// insert, a miss takes a free slot. The id, or 0.
uint32_t findCode(uint64_t code, bool insert)
{
    const Layout& L = *g_layout;
    const uint64_t name = at<uint64_t>(code, L.codeName), file = at<uint64_t>(code, L.codeFilename);
    const uint64_t linetable = at<uint64_t>(code, L.codeLinetable);
    const int32_t firstLine = at<int32_t>(code, L.codeFirstLine);
    uint32_t slot = uint32_t(mix(code)) & (kCodeSlots - 1);
    for (uint32_t probes = 0; probes < kCodeSlots; ++probes, slot = (slot + 1) & (kCodeSlots - 1)) {
        const CodeEntry& e = g_codeSlots[slot];
        const uint64_t key = e.code.load(std::memory_order_acquire);
        if (key == 0) return insert ? newCode(code, name, file, linetable, firstLine, slot) : 0;
        if (key == code && e.name == name && e.file == file && e.linetable == linetable && e.firstLine == firstLine)
            return e.codeId;
    }
    return 0;
}

// The id of a checked code object (a new one's name and file copied once); 0 when full.
uint32_t internCode(uint64_t code)
{
    if (const uint32_t id = findCode(code, false)) return id;
    pthread_mutex_lock(&g_lock);
    const uint32_t id = findCode(code, true);
    pthread_mutex_unlock(&g_lock);
    return id;
}

// The id of (code, lasti), its line resolved once; 0 when full.
uint32_t internFrame(uint32_t codeId, uint64_t code, int32_t lasti)
{
    const uint64_t key = uint64_t(codeId) << 32 | uint32_t(lasti + 1);
    const uint32_t start = uint32_t(mix(key)) & (kFrameSlots - 1);
    uint32_t slot = start;
    for (uint32_t probes = 0; probes < kFrameSlots; ++probes, slot = (slot + 1) & (kFrameSlots - 1)) {
        const uint64_t k = g_frameSlots[slot].key.load(std::memory_order_acquire);
        if (k == key) return g_frameSlots[slot].frameId;
        if (k == 0) break;
    }
    pthread_mutex_lock(&g_lock);
    uint32_t id = 0;
    slot = start;
    for (uint32_t probes = 0; probes < kFrameSlots; ++probes, slot = (slot + 1) & (kFrameSlots - 1)) {
        FrameSlot& s = g_frameSlots[slot];
        const uint64_t k = s.key.load(std::memory_order_acquire);
        if (k == key) {
            id = s.frameId;
            break;
        }
        if (k != 0) continue;
        const uint32_t count = g_frameCount.load(std::memory_order_relaxed);
        if (count >= kMaxFrames) break;
        const Layout& L = *g_layout;
        const uint64_t linetable = at<uint64_t>(code, L.codeLinetable);
        const int32_t firstLine = at<int32_t>(code, L.codeFirstLine);
        const int32_t line = isA(linetable, g_bytesType) ? lineOf(linetable, firstLine, lasti) : -1;
        g_frames[count] = FrameDef{codeId, line, lasti};
        s.frameId = count + 1;
        s.key.store(key, std::memory_order_release);
        g_frameCount.store(count + 1, std::memory_order_release);
        id = count + 1;
        break;
    }
    pthread_mutex_unlock(&g_lock);
    return id;
}

// Each thread's last frames, direct-mapped by (code, offset): a loop calls CUDA from the same few
// lines, and a hit costs a few loads from the code object (hot: the interpreter runs it) instead of
// two probes of tables that are megabytes apart. An entry holds what findCode compares, so a code
// object freed and another made at its address is a miss. Before it, the frame the last walk found at
// the same depth (a loop's stack is the same from one call to the next: no hash, no scattered lines).
// Kept in the thread's state (threadPyMemo), zero-initialised, with the last merged stack and its id
// (pythonLastStack).
struct FrameMemo {
    uint64_t code, name, file, linetable;
    int32_t firstLine, lasti;
    uint32_t id, pad;
    bool matches(uint64_t c, uint64_t n, uint64_t f, uint64_t t, int32_t first, int32_t l) const
    {
        return code == c && lasti == l && name == n && file == f && linetable == t && firstLine == first;
    }
};
constexpr uint32_t kMemoBits = 5;

}  // namespace

struct PythonMemo {
    FrameMemo byLine[1u << kMemoBits];
    FrameMemo byDepth[kMaxPyFrames];
    uint32_t lastCount, lastId;  // the last merged stack the thread interned, and its id
    uint64_t last[wire::kMaxStackDepth];
    uint32_t hint;              // pythonNativeHint; kHintOff: this thread asks for the full depth
    uint32_t hinted, retaken;   // captures that asked for the hint's depth, and of those taken again
    // pythonStats' counts of this thread's captures: written by it alone (no locked add on a line that
    // every capturing thread shares), summed over every thread state by the drain thread.
    std::atomic<uint64_t> withFrames, withoutGil, noThreadState;
};

namespace {

constexpr uint32_t kHintOff = ~0u;
static_assert(sizeof(PythonMemo) <= kPyMemoBytes, "the memo fits the thread state's room");

// The id of the frame at lasti in the checked code object, the depth-th of its walk, past the frame the
// previous walk found at that depth (frameId); 0 when the tables are full. Out of line: the walk inlines
// only the hit.
__attribute__((noinline)) uint32_t frameIdMiss(PythonMemo* memo, uint32_t depth, uint64_t code, int32_t lasti, uint64_t name,
                                               uint64_t file, uint64_t linetable, int32_t firstLine)
{
    if (!memo) {
        const uint32_t codeId = internCode(code);
        return codeId ? internFrame(codeId, code, lasti) : 0;
    }
    FrameMemo& m = memo->byLine[mix(code ^ uint64_t(uint32_t(lasti)) << 47) >> (64 - kMemoBits)];
    uint32_t id = 0;
    if (m.matches(code, name, file, linetable, firstLine, lasti)) {
        id = m.id;
    } else {
        const uint32_t codeId = internCode(code);
        id = codeId ? internFrame(codeId, code, lasti) : 0;
        if (id) m = FrameMemo{code, name, file, linetable, firstLine, lasti, id, 0};
    }
    if (id) memo->byDepth[depth] = FrameMemo{code, name, file, linetable, firstLine, lasti, id, 0};
    return id;
}

// The id of the frame at lasti in the checked code object, the depth-th of its walk; 0 when the tables
// are full. Row: the layout's row in kGpuspyPyLayouts (its offsets compiled in).
template <size_t Row>
__attribute__((always_inline)) inline uint32_t frameId(PythonMemo* memo, uint32_t depth, uint64_t code, int32_t lasti)
{
    constexpr Layout L = kGpuspyPyLayouts[Row];
    const uint64_t name = at<uint64_t>(code, L.codeName), file = at<uint64_t>(code, L.codeFilename);
    const uint64_t linetable = at<uint64_t>(code, L.codeLinetable);
    const int32_t firstLine = at<int32_t>(code, L.codeFirstLine);
    if (memo) {
        const FrameMemo& d = memo->byDepth[depth];
        if (d.matches(code, name, file, linetable, firstLine, lasti)) return d.id;
    }
    return frameIdMiss(memo, depth, code, lasti, name, file, linetable, firstLine);
}

struct PyFrame {
    uint32_t id;
    bool entry;  // the outermost Python frame its native eval-loop frame runs
};

// The calling thread's Python frames, innermost first, into out; how many. One instance per layout
// row: the offsets and the version's branches are constants (the walk runs in every capture).
template <size_t Row>
uint32_t walkFrames(PythonMemo* memo, PyFrame* out, uint32_t cap)
{
    const uint64_t tstate = reinterpret_cast<uint64_t>(g_ownTstate());
    if (!plausible(tstate)) {
        if (memo) bump(memo->noThreadState, 1);
        return 0;
    }
    constexpr Layout L = kGpuspyPyLayouts[Row];
    uint64_t frame = at<uint64_t>(tstate, L.tstateFrame);
    if constexpr (L.cframeCurrent != kNone) {
        if (!plausible(frame)) return 0;
        frame = at<uint64_t>(frame, L.cframeCurrent);
    }
    uint32_t n = 0;
    for (uint32_t steps = 0; frame != 0 && n < cap; ++steps) {
        if (!plausible(frame) || steps >= 4 * cap) {
            g_badFrames.fetch_add(1, std::memory_order_relaxed);
            break;
        }
        // 3.12+: an eval loop's entry is a frame of its own on the C stack, under the frames it runs.
        if constexpr (L.frameOwner != kNone) {
            if (at<uint8_t>(frame, L.frameOwner) == GPUSPY_PY_FRAME_OWNED_BY_CSTACK) {
                if (n > 0) out[n - 1].entry = true;
                frame = at<uint64_t>(frame, L.framePrevious);
                continue;
            }
        }
        const uint64_t code = at<uint64_t>(frame, L.frameCode);
        if (!isA(code, g_codeType)) {
            g_badFrames.fetch_add(1, std::memory_order_relaxed);
            break;
        }
        int32_t lasti = -1;
        if constexpr (L.codeAdaptive == kNone) {
            // 3.9/3.10: int f_lasti, -1 before the first instruction.
            const int32_t raw = at<int32_t>(frame, L.frameInstr);
            if (raw >= 0 && raw < (1 << 29)) lasti = int32_t(int64_t(raw) * L.lastiBytes / 2);
        } else {
            const uint64_t instr = at<uint64_t>(frame, L.frameInstr);
            const uint64_t first = code + L.codeAdaptive;
            if (instr >= first && instr - first < (1ull << 30)) lasti = int32_t((instr - first) / 2);
        }
        const uint32_t id = frameId<Row>(memo, n, code, lasti);
        if (id == 0) break;  // full
        // 3.9/3.10: every frame runs in an eval loop of its own; 3.11: is_entry says which do.
        bool entry = L.frameOwner == kNone;
        if constexpr (L.frameIsEntry != kNone) entry = at<uint8_t>(frame, L.frameIsEntry) != 0;
        out[n++] = PyFrame{id, entry};
        frame = at<uint64_t>(frame, L.framePrevious);
    }
    if (n > 0) {
        if (memo) {
            bump(memo->withFrames, 1);
            if (g_currentTstate && reinterpret_cast<uint64_t>(g_currentTstate()) != tstate) bump(memo->withoutGil, 1);
        }
    }
    return n;
}

using WalkFn = uint32_t (*)(PythonMemo*, PyFrame*, uint32_t);
constexpr WalkFn kWalks[] = {walkFrames<0>, walkFrames<1>, walkFrames<2>, walkFrames<3>, walkFrames<4>};
static_assert(sizeof kWalks / sizeof kWalks[0] == sizeof kGpuspyPyLayouts / sizeof kGpuspyPyLayouts[0],
              "a walk for every layout row");
WalkFn g_walk = nullptr;  // pythonConfigure's row's

void* reserve(size_t bytes)
{
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

void say(const char* msg)
{
    const ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}

// dl_iterate_phdr: the executable segment of the object (libpython, or the python executable itself)
// that holds g_evalLo.
int findInterpreterText(dl_phdr_info* info, size_t, void*)
{
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        const uint64_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
        if (g_evalLo >= lo && g_evalLo < hi) {
            g_interpLo = lo;
            g_interpHi = hi;
            return 1;
        }
    }
    return 0;
}

// The interpreter's minor version, where its major is 3; 0 otherwise. Py_Version (3.11+: the hex
// version, data) where there is one, else the version string Py_GetVersion returns ("3.10.13 (main, ...":
// a static buffer formatted from constants, safe before the interpreter starts).
uint32_t pythonMinor(const unsigned long* version)
{
    if (version) return (*version >> 24) == 3 ? uint32_t((*version >> 16) & 0xff) : 0;
    auto text = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
    const char* v = text ? text() : nullptr;
    if (!v || v[0] != '3' || v[1] != '.') return 0;
    uint32_t minor = 0, digits = 0;
    for (const char* p = v + 2; *p >= '0' && *p <= '9' && digits < 3; ++p, ++digits) minor = minor * 10 + uint32_t(*p - '0');
    return digits > 0 && (v[2 + digits] == '.' || v[2 + digits] == ' ' || v[2 + digits] == '+') ? minor : 0;
}

}  // namespace

void pythonConfigure()
{
    if (g_layout) return;
    const char* mode = setting("GPUSPY_PYTHON");
    if (mode && mode[0] == '0') return;
    const bool asked = mode && mode[0] == '1';
    const auto* version = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"));
    auto own = reinterpret_cast<TstateFn>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
    void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (!own || !eval) {
        if (asked) say("gpuspy: GPUSPY_PYTHON=1 but this process runs no CPython; native stacks only\n");
        return;
    }
    const Layout* layout = nullptr;
    WalkFn walk = nullptr;
    const uint32_t minor = pythonMinor(version);
    for (size_t row = 0; row < sizeof kGpuspyPyLayouts / sizeof kGpuspyPyLayouts[0]; ++row)
        if (kGpuspyPyLayouts[row].minor == minor) layout = &kGpuspyPyLayouts[row], walk = kWalks[row];
    if (!layout) {
        say("gpuspy: this CPython's frame layout is not one gpuspy knows (3.9 to 3.13); native stacks only\n");
        return;
    }
    Dl_info info{};
    ElfW(Sym)* sym = nullptr;
    if (!dladdr1(eval, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) || !sym || sym->st_size == 0) return;
    g_codeType = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "PyCode_Type"));
    g_strType = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "PyUnicode_Type"));
    g_bytesType = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "PyBytes_Type"));
    if (!g_codeType || !g_strType || !g_bytesType) return;
    // The object header the rows assume (ob_type at 8): a free-threaded (3.13t) or a debug build
    // (Py_TRACE_REFS) has a longer one, with the same version numbers. PyCode_Type is a type object,
    // so its own ob_type must read as PyType_Type.
    const auto typeType = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "PyType_Type"));
    if (!typeType || !isA(g_codeType, typeType)) {
        say("gpuspy: this CPython's object header is not the one gpuspy knows (a free-threaded or debug build?); "
            "native stacks only\n");
        return;
    }
    g_codeSlots = static_cast<CodeEntry*>(reserve(kCodeSlots * sizeof(CodeEntry)));
    g_codes = static_cast<CodeDef*>(reserve(kMaxCodes * sizeof(CodeDef)));
    g_names = static_cast<char*>(reserve(kNameBytes));
    g_frameSlots = static_cast<FrameSlot*>(reserve(kFrameSlots * sizeof(FrameSlot)));
    g_frames = static_cast<FrameDef*>(reserve(kMaxFrames * sizeof(FrameDef)));
    if (!g_codeSlots || !g_codes || !g_names || !g_frameSlots || !g_frames) return;
    g_evalLo = reinterpret_cast<uint64_t>(eval);
    g_evalHi = g_evalLo + sym->st_size;
    dl_iterate_phdr(findInterpreterText, nullptr);
    if (!g_interpHi) g_interpLo = g_evalLo, g_interpHi = g_evalHi;  // the merge's classes nest: eval in interp
    g_ownTstate = own;
    g_currentTstate = reinterpret_cast<TstateFn>(dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet"));
    if (!g_currentTstate) g_currentTstate = reinterpret_cast<TstateFn>(dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked"));
    g_layout = layout;
    g_walk = walk;
    const char* hint = setting("GPUSPY_PYTHON_HINT");
    g_hintOn = !(hint && hint[0] == '0');
    g_active = true;
}

bool pythonActive() { return g_active; }

PythonMemo* pythonMemo() { return reinterpret_cast<PythonMemo*>(threadPyMemo()); }

uint32_t pythonMerge(PythonMemo* memo, const uint64_t* pcs, uint32_t n, uint64_t* out, uint32_t cap, uint32_t* placed)
{
    *placed = 0;
    PyFrame py[kMaxPyFrames];
    const uint32_t count = g_walk(memo, py, kMaxPyFrames);
    if (count == 0) return 0;
    // In locals: out may alias any uint64_t, the globals included, and the loops run on every capture.
    const uint64_t evalLo = g_evalLo, evalSpan = g_evalHi - g_evalLo;
    const uint64_t interpLo = g_interpLo, interpSpan = g_interpHi - g_interpLo;
    uint32_t m = 0, i = 0;
    // The native frames inward of the innermost eval loop (the hooked library, ctypes, an extension):
    // all kept.
    for (; i < n && m < cap && pcs[i] - 1 - evalLo >= evalSpan; ++i) out[m++] = pcs[i];
    uint32_t next = 0;
    for (; i < n; ++i) {
        if (m == cap) return m;
        const uint64_t pc = pcs[i] - 1;
        if (pc - interpLo >= interpSpan) {  // another library's frame (an extension, ctypes, libffi): kept
            out[m++] = pcs[i];
            continue;
        }
        // The interpreter's own frames between two Python frames (3.9/3.10 call each Python function
        // through _PyEval_Vector and kin; any version where C code calls Python back) are dropped, as
        // py-spy --native does: a Python frame's caller is the Python frame that called it.
        if (pc - evalLo >= evalSpan) continue;
        // A return address into the eval loop: the Python frames that loop runs, up to its entry frame.
        do {
            out[m++] = wire::kPyFrameTag | py[next].id;
        } while (!py[next++].entry && next < count && m < cap);
        if (next == count) {  // the outermost Python frame: the stack ends here
            *placed = i + 1;
            return m;
        }
    }
    // Frames of eval loops beyond the captured native depth: outer to every native frame taken.
    while (next < count && m < cap) out[m++] = wire::kPyFrameTag | py[next++].id;
    return m;
}

uint32_t pythonNativeHint(const PythonMemo* memo)
{
    if (!g_hintOn) return 0;
    return memo && memo->hint != kHintOff ? memo->hint : 0;
}

void pythonLearnHint(PythonMemo* memo, uint32_t need, bool retaken)
{
    if (!g_hintOn) return;
    if (!memo || memo->hint == kHintOff) return;
    if (memo->hint != 0) {
        ++memo->hinted;
        memo->retaken += retaken;
        // More than one capture in 8 taken twice, over at least 64: cheaper to always take the full depth.
        if (memo->hinted >= 64 && memo->retaken * 8 > memo->hinted) {
            memo->hint = kHintOff;
            return;
        }
    }
    // The deepest outermost eval loop seen: a loop whose stacks alternate between two depths asks for
    // the deeper one (a few frames more) rather than being taken twice every other call.
    if (need > memo->hint) memo->hint = need;
}

uint32_t pythonLastStack(const PythonMemo* memo, const uint64_t* merged, uint32_t m)
{
    if (!memo || memo->lastCount != m || m > wire::kMaxStackDepth) return 0;
    return std::memcmp(memo->last, merged, m * sizeof(uint64_t)) == 0 ? memo->lastId : 0;
}

void pythonRememberStack(PythonMemo* memo, const uint64_t* merged, uint32_t m, uint32_t id)
{
    if (!memo || m > wire::kMaxStackDepth || id == 0) return;
    std::memcpy(memo->last, merged, m * sizeof(uint64_t));
    memo->lastCount = m;
    memo->lastId = id;
}

size_t pythonDrainDefs(uint8_t* out, size_t cap)
{
    if (!g_active) return 0;
    size_t written = 0;
    const uint32_t codes = g_codeCount.load(std::memory_order_acquire);
    while (g_drainCode < codes) {
        const CodeDef& c = g_codes[g_drainCode];
        wire::PyCodeDefBody body{g_drainCode + 1, uint32_t(c.firstLine), c.textLength, 0};
        const size_t n = wire::encodeVar(out + written, cap - written, body, g_names + c.textOffset, c.textLength);
        if (n == 0) return written;
        written += n;
        ++g_drainCode;
    }
    const uint32_t frames = g_frameCount.load(std::memory_order_acquire);
    while (g_drainFrame < frames) {
        const FrameDef& f = g_frames[g_drainFrame];
        wire::PyFrameDefBody body{g_drainFrame + 1, f.codeId, f.line, f.lasti};
        const size_t n = wire::encode(out + written, cap - written, body);
        if (n == 0) return written;
        written += n;
        ++g_drainFrame;
    }
    return written;
}

void pythonAfterForkChild(bool forked)
{
    if (forked) pthread_mutex_init(&g_lock, nullptr);
    g_drainCode = 0;
    g_drainFrame = 0;
}

PythonStats pythonStats()
{
    PythonStats s{0, 0, 0, g_badFrames.load(), g_codeCount.load(), g_frameCount.load()};
    forEachPyMemo([&s](const unsigned char* room) {
        const auto* memo = reinterpret_cast<const PythonMemo*>(room);
        s.withFrames += memo->withFrames.load(std::memory_order_relaxed);
        s.withoutGil += memo->withoutGil.load(std::memory_order_relaxed);
        s.noThreadState += memo->noThreadState.load(std::memory_order_relaxed);
    });
    return s;
}

size_t pythonNotice(uint8_t* out, size_t cap)
{
    if (!g_active) return 0;
    const PythonStats s = pythonStats();
    char text[512];
    const int n = snprintf(text, sizeof text,
                           "python: %llu stacks with Python frames (%llu on threads that had released the GIL); "
                           "%llu on threads without a Python thread state (native frames only); %llu frame chains "
                           "cut at a frame that failed a check; %u code objects, %u frames interned; read by the "
                           "CPython 3.%u frame layout",
                           static_cast<unsigned long long>(s.withFrames), static_cast<unsigned long long>(s.withoutGil),
                           static_cast<unsigned long long>(s.noThreadState), static_cast<unsigned long long>(s.badFrames),
                           s.codes, s.frames, g_layout->minor);
    if (n <= 0 || size_t(n) >= sizeof text) return 0;
    wire::NoticeBody body{wire::kNoticePythonFrames, uint32_t(n)};
    return wire::encodeVar(out, cap, body, text, uint32_t(n));
}

}  // namespace gpuspy::shim
