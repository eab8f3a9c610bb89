// Fatbin, cubin and PTX parsing: which image a CC `arch` driver loads, its versions and its kernel names.
//
// Layouts (as nvcc 13 writes them; see README "Module images"):
//   wrapper  {u32 magic 0x466243b1, u32 version, const void* fatbin, ...}
//   fatbin   {u32 magic 0xba55ed50, u16 version 1, u16 header size, u64 size of the entries}, then entries
//   entry    {u16 kind (1 PTX, 2 ELF), u16 version 0x101, u32 header size, u32 padded payload size, u32 -,
//             u32 payload size, u32 -, u32 ISA version, u32 arch, u32 -, u32 -, u64 flags, u64 -,
//             u64 uncompressed size}, payload after the header; flags 0x2000 LZ4 block, 0x8000 zstd
#include "fatbin.h"

#include <elf.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>

namespace simcuda {
namespace {

constexpr uint32_t kWrapperMagic = 0x466243b1;
constexpr uint32_t kFatbinMagic = 0xba55ed50;
constexpr uint64_t kFlagLz4 = 0x2000, kFlagZstd = 0x8000, kFlagZlib = 0x1000;
constexpr unsigned char kStoCudaEntry = 0x10;  // st_other bit of a kernel (entry function) symbol

struct Entry {
    bool ptx = false;
    int arch = 0;
    const unsigned char* payload = nullptr;
    size_t size = 0;
    uint64_t flags = 0;
    size_t uncompressed = 0;
};

template <class T>
T load(const unsigned char* p)
{
    T v;
    memcpy(&v, p, sizeof v);
    return v;
}

std::vector<Entry> fatbinEntries(const unsigned char* fb)
{
    std::vector<Entry> out;
    const uint16_t headerSize = load<uint16_t>(fb + 6);
    const uint64_t total = load<uint64_t>(fb + 8);
    const unsigned char* p = fb + headerSize;
    const unsigned char* end = p + total;
    while (p + 64 <= end) {
        const uint16_t kind = load<uint16_t>(p);
        const uint32_t hs = load<uint32_t>(p + 4), padded = load<uint32_t>(p + 8), size = load<uint32_t>(p + 16);
        if (hs < 64 || (kind != 1 && kind != 2)) break;
        Entry e;
        e.ptx = kind == 1;
        e.arch = static_cast<int>(load<uint32_t>(p + 28));
        e.payload = p + hs;
        e.flags = load<uint64_t>(p + 40);
        e.uncompressed = load<uint64_t>(p + 56);
        const bool compressed = e.flags & (kFlagLz4 | kFlagZstd | kFlagZlib);
        e.size = compressed ? size : padded;  // an uncompressed cubin's payload size field is 0
        out.push_back(e);
        p += hs + padded;
    }
    return out;
}

// The payload as bytes, decompressed; empty if the compression is unknown or the data malformed.
std::string payloadBytes(const Entry& e)
{
    if (!(e.flags & (kFlagLz4 | kFlagZstd | kFlagZlib))) return std::string(reinterpret_cast<const char*>(e.payload), e.size);
    if (!e.uncompressed || e.uncompressed > (1u << 30)) return {};
    std::string out(e.uncompressed, '\0');
    auto* dst = reinterpret_cast<unsigned char*>(&out[0]);
    if (e.flags & kFlagZstd) {
        const size_t n = ZSTD_decompress(dst, out.size(), e.payload, e.size);
        if (ZSTD_isError(n)) return {};
        out.resize(n);
        return out;
    }
    if (e.flags & kFlagLz4) return lz4BlockDecompress(e.payload, e.size, dst, out.size()) ? out : std::string();
    return {};  // zlib (old toolkits): not read
}

// The entry functions and the defined variables of a cubin (its symbol table).
bool elfEntryNames(const unsigned char* elf, size_t size, std::vector<std::string>* names,
                   std::vector<std::string>* globals)
{
    if (size < sizeof(Elf64_Ehdr) || memcmp(elf, ELFMAG, SELFMAG) != 0 || elf[EI_CLASS] != ELFCLASS64) return false;
    const auto eh = load<Elf64_Ehdr>(elf);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > size) return false;
    auto section = [&](unsigned i) { return load<Elf64_Shdr>(elf + eh.e_shoff + i * sizeof(Elf64_Shdr)); };
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
        const Elf64_Shdr sh = section(i);
        if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum || sh.sh_offset + sh.sh_size > size) continue;
        const Elf64_Shdr str = section(sh.sh_link);
        if (str.sh_offset + str.sh_size > size) return false;
        for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
            const auto sym = load<Elf64_Sym>(elf + sh.sh_offset + off);
            if (sym.st_name >= str.sh_size) continue;
            const char* name = reinterpret_cast<const char*>(elf + str.sh_offset + sym.st_name);
            const std::string text(name, strnlen(name, str.sh_size - sym.st_name));
            if (ELF64_ST_TYPE(sym.st_info) == STT_OBJECT && sym.st_shndx != SHN_UNDEF && !text.empty())
                globals->push_back(text);
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & kStoCudaEntry)) continue;
            names->push_back(text);
        }
    }
    return true;
}

size_t elfSize(const unsigned char* elf)
{
    const auto eh = load<Elf64_Ehdr>(elf);
    return eh.e_shoff + size_t(eh.e_shnum) * eh.e_shentsize;
}

// The arch of a cubin: e_flags holds it in bits 8..15 from ELF ABI version 8 on, in bits 0..7 before.
int elfArch(const unsigned char* elf)
{
    const auto eh = load<Elf64_Ehdr>(elf);
    return static_cast<int>(elf[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff);
}

// `.target sm_75` and every `.entry name(`; false if it is not PTX.
bool ptxInfo(const std::string& text, int* arch, std::vector<std::string>* names)
{
    if (text.find(".version") == std::string::npos) return false;
    const size_t t = text.find(".target");
    if (t != std::string::npos) {
        const size_t sm = text.find("sm_", t);
        if (sm != std::string::npos) *arch = atoi(text.c_str() + sm + 3);
    }
    for (size_t p = text.find(".entry"); p != std::string::npos; p = text.find(".entry", p + 6)) {
        size_t b = p + 6;
        while (b < text.size() && isspace(static_cast<unsigned char>(text[b]))) ++b;
        size_t e = b;
        while (e < text.size() && (isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' || text[e] == '$'))
            ++e;
        if (e > b) names->push_back(text.substr(b, e - b));
    }
    return true;
}

bool looksLikePtx(const unsigned char* p)
{
    for (int i = 0; i < 4; ++i)
        if (!p[i] || p[i] > 0x7e || (p[i] < 0x20 && !isspace(p[i]))) return false;
    return true;
}

}  // namespace

ModuleImage parseModuleImage(const void* image, int arch)
{
    ModuleImage m;
    m.binaryVersion = m.ptxVersion = arch;  // an opaque image: taken to be built for the device
    if (!image) return m;
    const auto* p = static_cast<const unsigned char*>(image);
    uint32_t magic = load<uint32_t>(p);
    if (magic == kWrapperMagic) {
        p = load<const unsigned char*>(p + 8);
        if (!p) return m;
        magic = load<uint32_t>(p);
    }
    if (magic == kFatbinMagic) {
        m.recognised = true;
        const std::vector<Entry> entries = fatbinEntries(p);
        const Entry* sass = nullptr;
        const Entry* ptx = nullptr;
        for (const Entry& e : entries) {
            if (!e.ptx && e.arch / 10 == arch / 10 && e.arch % 10 <= arch % 10 && (!sass || e.arch > sass->arch))
                sass = &e;
            if (e.ptx && e.arch <= arch && (!ptx || e.arch > ptx->arch)) ptx = &e;
        }
        const Entry* chosen = sass ? sass : ptx;
        if (!chosen) {
            m.loadable = false;
            m.binaryVersion = m.ptxVersion = 0;
            return m;
        }
        m.jit = !sass;
        m.binaryVersion = sass ? sass->arch : arch;
        m.ptxVersion = chosen->arch;
        const std::string bytes = payloadBytes(*chosen);
        if (bytes.empty()) return m;
        const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
        int ptxArch = 0;
        m.namesKnown = chosen->ptx ? ptxInfo(bytes, &ptxArch, &m.functions)
                                   : elfEntryNames(b, bytes.size(), &m.functions, &m.globals);
        m.globalsKnown = m.namesKnown && !chosen->ptx;
        return m;
    }
    if (memcmp(p, ELFMAG, SELFMAG) == 0) {  // a cubin: loadable only on its own major
        m.recognised = true;
        const int a = elfArch(p);
        m.loadable = a / 10 == arch / 10 && a % 10 <= arch % 10;
        m.binaryVersion = m.ptxVersion = a;
        m.namesKnown = elfEntryNames(p, elfSize(p), &m.functions, &m.globals);
        m.globalsKnown = m.namesKnown;
        return m;
    }
    if (looksLikePtx(p)) {
        const std::string text(reinterpret_cast<const char*>(p));
        int ptxArch = 0;
        if (ptxInfo(text, &ptxArch, &m.functions)) {
            m.recognised = m.namesKnown = m.jit = true;
            m.loadable = ptxArch <= arch;
            m.ptxVersion = ptxArch ? ptxArch : arch;
            m.binaryVersion = arch;
        }
    }
    return m;
}

// LZ4 block format: sequences of {token, literal length+, literals, u16 offset, match length+}.
bool lz4BlockDecompress(const unsigned char* in, size_t inSize, unsigned char* out, size_t outSize)
{
    size_t ip = 0, op = 0;
    while (ip < inSize) {
        const unsigned token = in[ip++];
        size_t lit = token >> 4;
        if (lit == 15)
            for (unsigned char c = 255; c == 255 && ip < inSize;) lit += (c = in[ip++]);
        if (ip + lit > inSize || op + lit > outSize) return false;
        memcpy(out + op, in + ip, lit);
        ip += lit;
        op += lit;
        if (ip == inSize) break;  // the last sequence has literals only
        if (ip + 2 > inSize) return false;
        const size_t offset = in[ip] | (in[ip + 1] << 8);
        ip += 2;
        size_t len = (token & 15) + 4;
        if ((token & 15) == 15)
            for (unsigned char c = 255; c == 255 && ip < inSize;) len += (c = in[ip++]);
        if (!offset || offset > op || op + len > outSize) return false;
        for (size_t i = 0; i < len; ++i, ++op) out[op] = out[op - offset];
    }
    return op == outSize;
}

}  // namespace simcuda
