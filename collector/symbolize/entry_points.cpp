// collector/symbolize/entry_points.cpp: see entry_points.h. x86-64 only: the instructions decoded are
// `call rel32`, `call *disp32(%rip)`, the PLT's `[endbr64] [bnd] jmp *disp32(%rip)`, and an export's
// `[endbr64] [argument set-up] jmp rel32|rel8`; anything else answers "".
#include "collector/symbolize/entry_points.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gpuspy::collect {

namespace {

int32_t rel32(const uint8_t* p)
{
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

bool isEndbr64(const uint8_t* p) { return p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa; }

bool isX86_64(Elf* elf)
{
    GElf_Ehdr eh;
    return gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64;
}

}  // namespace

bool EntryPoints::read(uint64_t address, uint8_t* out, size_t n, bool code)
{
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(m_mod, &bias);
    if (!elf || !isX86_64(elf) || address < bias) return false;
    const uint64_t v = address - bias;
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) != 0) return false;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, int(i), &ph) || ph.p_type != PT_LOAD || (code && !(ph.p_flags & PF_X))) continue;
        if (v < ph.p_vaddr || v + n > ph.p_vaddr + ph.p_filesz) continue;
        const uint64_t off = ph.p_offset + (v - ph.p_vaddr);
        size_t size = 0;
        if (const char* raw = elf_rawfile(elf, &size); raw && off + n <= size) {
            std::memcpy(out, raw + off, n);
            return true;
        }
        Elf_Data* d = elf_getdata_rawchunk(elf, int64_t(off), n, ELF_T_BYTE);
        if (!d || d->d_size < n) return false;
        std::memcpy(out, d->d_buf, n);
        return true;
    }
    return false;
}

void EntryPoints::loadRelocations()
{
    if (m_relocationsLoaded) return;
    m_relocationsLoaded = true;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(m_mod, &bias);
    if (!elf || !isX86_64(elf)) return;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize) continue;
        Elf_Scn* symScn = elf_getscn(elf, sh.sh_link);
        GElf_Shdr symSh;
        if (!symScn || !gelf_getshdr(symScn, &symSh)) continue;
        Elf_Data* rels = elf_getdata(scn, nullptr);
        Elf_Data* syms = elf_getdata(symScn, nullptr);
        if (!rels || !syms) continue;
        const size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < count; ++i) {
            GElf_Rela r;
            if (!gelf_getrela(rels, int(i), &r)) break;
            const auto type = GELF_R_TYPE(r.r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            GElf_Sym sym;
            if (!gelf_getsym(syms, int(GELF_R_SYM(r.r_info)), &sym)) continue;
            const char* name = elf_strptr(elf, symSh.sh_link, sym.st_name);
            if (name && *name) m_slotNames.emplace(r.r_offset + bias, name);
        }
    }
}

std::string EntryPoints::nameAt(uint64_t target)
{
    uint8_t b[16];
    if (read(target, b, sizeof b)) {
        size_t i = isEndbr64(b) ? 4 : 0;
        if (b[i] == 0xf2) ++i;  // bnd
        if (b[i] == 0xff && b[i + 1] == 0x25) {  // a PLT stub: jmp *slot(%rip)
            loadRelocations();
            auto it = m_slotNames.find(target + i + 6 + int64_t(rel32(b + i + 2)));
            return it == m_slotNames.end() ? std::string() : it->second;
        }
    }
    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(m_mod, target, &offset, &sym, nullptr, nullptr, nullptr);
    return name && offset == 0 ? std::string(name) : std::string();
}

std::string EntryPoints::calleeOf(uint64_t returnAddress)
{
    uint8_t b[6];
    if (returnAddress < 6 || !read(returnAddress - 6, b, sizeof b)) return {};
    if (b[0] == 0xff && b[1] == 0x15) {  // call *slot(%rip): -fno-plt
        loadRelocations();
        auto it = m_slotNames.find(returnAddress + int64_t(rel32(b + 2)));
        return it == m_slotNames.end() ? std::string() : it->second;
    }
    if (b[1] == 0xe8) return nameAt(returnAddress + int64_t(rel32(b + 2)));  // call rel32
    return {};
}

void EntryPoints::loadExportJumps()
{
    if (m_jumpsLoaded) return;
    m_jumpsLoaded = true;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(m_mod, &bias);
    if (!elf || !isX86_64(elf)) return;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize) continue;
        Elf_Data* syms = elf_getdata(scn, nullptr);
        if (!syms) continue;
        const size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t s = 0; s < count; ++s) {
            GElf_Sym sym;
            if (!gelf_getsym(syms, int(s), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
                sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
                continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            const uint64_t at = sym.st_value + bias;
            uint8_t b[24];
            if (!name || !*name || !read(at, b, sizeof b)) continue;
            size_t i = isEndbr64(b) ? 4 : 0;
            // Up to two instructions that set an argument before the jump (cufftExecR2C sets the
            // direction: mov $-1,%ecx; jmp cufftXtExec).
            for (int k = 0; k < 2; ++k) {
                if (b[i] >= 0xb8 && b[i] <= 0xbf) i += 5;                                         // mov $imm32,%r32
                else if (b[i] == 0x41 && b[i + 1] >= 0xb8 && b[i + 1] <= 0xbf) i += 6;            // mov $imm32,%r8d..
                else if ((b[i] == 0x31 || b[i] == 0x33) && b[i + 1] >= 0xc0) i += 2;              // xor %r32,%r32
                else if (b[i] == 0x45 && (b[i + 1] == 0x31 || b[i + 1] == 0x33) && b[i + 2] >= 0xc0) i += 3;
                else break;
            }
            uint64_t target = 0;
            if (b[i] == 0xe9) target = at + i + 5 + int64_t(rel32(b + i + 1));
            else if (b[i] == 0xeb) target = at + i + 2 + int64_t(int8_t(b[i + 1]));
            else continue;
            std::vector<std::string>& names = m_jumps[target];
            if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
    }
}

void EntryPoints::loadFunctionStarts()
{
    if (m_startsLoaded) return;
    m_startsLoaded = true;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(m_mod, &bias);
    size_t phnum = 0;
    if (!elf || !isX86_64(elf) || elf_getphdrnum(elf, &phnum) != 0) return;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, int(i), &ph) || ph.p_type != PT_GNU_EH_FRAME || ph.p_filesz < 12) continue;
        // .eh_frame_hdr: version 1, then the encodings of eh_frame_ptr, fde_count and the table. The
        // linker writes eh_frame_ptr pc-relative sdata4, the count udata4 and the table datarel sdata4
        // (initial location, FDE address, relative to the header): any other layout is not read.
        const uint64_t hdr = ph.p_vaddr + bias;
        std::vector<uint8_t> b(ph.p_filesz);
        if (!read(hdr, b.data(), b.size(), false) || b[0] != 1 || (b[1] & 0x0f) != 0x0b || b[2] != 0x03 || b[3] != 0x3b) return;
        uint32_t count;
        std::memcpy(&count, &b[8], 4);
        if (12 + uint64_t(count) * 8 > b.size()) return;
        m_starts.reserve(count);
        for (uint32_t k = 0; k < count; ++k)
            m_starts.push_back({hdr + int64_t(rel32(&b[12 + k * 8])), hdr + int64_t(rel32(&b[16 + k * 8]))});
        return;
    }
}

std::string EntryPoints::exportJumpingInto(uint64_t address)
{
    loadFunctionStarts();
    // The function holding the address: the last FDE starting at or before it (the table is sorted).
    auto it = std::upper_bound(m_starts.begin(), m_starts.end(), address,
                               [](uint64_t a, const std::pair<uint64_t, uint64_t>& e) { return a < e.first; });
    if (it == m_starts.begin()) return {};
    const auto [start, fde] = *--it;
    // Its end, where the FDE's pc_begin reads as the linker writes it (pc-relative sdata4): an address
    // past it lies in code no FDE describes.
    uint8_t f[16];
    if (read(fde, f, sizeof f, false)) {
        uint32_t length, range;
        std::memcpy(&length, f, 4);
        std::memcpy(&range, f + 12, 4);
        if (length != 0xffffffffu && fde + 8 + int64_t(rel32(f + 8)) == start && address >= start + range) return {};
    }
    loadExportJumps();
    auto jumps = m_jumps.find(start);
    return jumps != m_jumps.end() && jumps->second.size() == 1 ? jumps->second.front() : std::string();
}

}  // namespace gpuspy::collect
