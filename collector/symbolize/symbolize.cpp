// collector/symbolize/symbolize.cpp: return addresses to functions, file:line and inlined frames through an
// offline libdwfl session per process; module+offset wherever the binary or its DWARF is missing.
#include "collector/symbolize/symbolize.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <string>

namespace gpuspy::collect {

namespace {

// Default search path: next to the file, .debug/ and /usr/lib/debug (build-id links included).
char* g_debuginfoPath = nullptr;

// libdwfl keeps a pointer to its callbacks for the whole session.
const Dwfl_Callbacks kCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &g_debuginfoPath,
};

std::string demangle(const char* raw)
{
    if (!raw || !*raw) return {};
    // Symbol tables of separate debug files name versioned symbols "__libc_start_main@@GLIBC_2.34".
    std::string name(raw);
    if (size_t at = name.find('@'); at != std::string::npos && at > 0) name.resize(at);
    int status = 0;
    char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !out) return name;
    std::string s(out);
    std::free(out);
    return s;
}

// The function a subprogram or inlined_subroutine DIE stands for: its linkage name demangled
// (qualified, with parameters, like the ELF symbol), else its plain name, following
// abstract_origin and specification.
std::string dieFunctionName(Dwarf_Die* die)
{
    Dwarf_Attribute attr;
    for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
        if (dwarf_attr_integrate(die, at, &attr)) {
            if (const char* s = dwarf_formstring(&attr)) return demangle(s);
        }
    }
    if (dwarf_attr_integrate(die, DW_AT_name, &attr)) {
        if (const char* s = dwarf_formstring(&attr)) return s;
    }
    return {};
}

// Where an inlined_subroutine was called from, in its caller: DW_AT_call_file/call_line.
void callSite(Dwarf_Die* inlined, Dwarf_Die* cu, std::string& file, uint32_t& line)
{
    file.clear();
    line = 0;
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    if (dwarf_attr(inlined, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &value) == 0) line = uint32_t(value);
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (dwarf_attr(inlined, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &value) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && value < nfiles) {
        if (const char* s = dwarf_filesrc(files, value, nullptr, nullptr)) file = s;
    }
}

}  // namespace

Symbolizer::Symbolizer(std::vector<ModuleInfo> modules) : m_modules(std::move(modules))
{
    m_dwfl = dwfl_begin(&kCallbacks);
    if (!m_dwfl) return;
    dwfl_report_begin(m_dwfl);
    // Latest first, as in moduleOf. A module that is gone, unreadable or overlaps one reported
    // already is simply not reported: its addresses fall back to module+offset.
    for (auto it = m_modules.rbegin(); it != m_modules.rend(); ++it) {
        if (it->path.empty() || it->path[0] != '/') continue;
        dwfl_report_elf(m_dwfl, it->path.c_str(), it->path.c_str(), -1, it->bias, false);
    }
    dwfl_report_end(m_dwfl, nullptr, nullptr);
}

Symbolizer::~Symbolizer()
{
    if (m_dwfl) dwfl_end(m_dwfl);
}

const ModuleInfo* Symbolizer::moduleOf(uint64_t address) const
{
    // The latest module first: one loaded where an unloaded one was replaces it in the shim's
    // append-only map.
    for (auto it = m_modules.rbegin(); it != m_modules.rend(); ++it)
        if (address >= it->start && address < it->end) return &*it;
    return nullptr;
}

std::vector<Frame> Symbolizer::symbolize(uint64_t address)
{
    try {
        auto it = m_cache.find(address);
        if (it != m_cache.end()) return it->second;
        std::vector<Frame> frames = lookup(address);
        m_cache.emplace(address, frames);
        return frames;
    } catch (...) {
        // Out of memory or a libdw surprise: still an answer.
        Frame f;
        f.address = address;
        f.offset = address;
        return {f};
    }
}

std::vector<Frame> Symbolizer::lookup(uint64_t address)
{
    Frame base;
    base.address = address;
    base.offset = address;
    if (const ModuleInfo* m = moduleOf(address)) {
        base.module = m->path;
        base.offset = address - m->bias;
    }
    if (!m_dwfl || address == 0) return {base};

    // A return address points after the call: the call instruction is at address - 1.
    const Dwarf_Addr pc = address - 1;
    Dwfl_Module* mod = dwfl_addrmodule(m_dwfl, pc);
    if (!mod) return {base};
    // Only the module the map names (not an older one at the same place whose file was readable).
    const char* modName = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (!modName || base.module != modName) return {base};

    // The real function, from the symbol table (.symtab, else .dynsym).
    GElf_Off symOffset = 0;
    GElf_Sym sym;
    const char* symName = dwfl_module_addrinfo(mod, pc, &symOffset, &sym, nullptr, nullptr, nullptr);
    base.function = demangle(symName);
    std::unique_ptr<EntryPoints>& entries = m_entryPoints[mod];
    if (!entries) entries = std::make_unique<EntryPoints>(mod);
    // Code no symbol names that an export tail-jumps into (cusolverDnSsyevd) is named by the export.
    if (base.function.empty()) base.function = demangle(entries->exportJumpingInto(pc).c_str());

    // file:line of the innermost frame, from the line table.
    std::string file;
    uint32_t line = 0;
    if (Dwfl_Line* l = dwfl_module_getsrc(mod, pc)) {
        int lineNo = 0;
        if (const char* s = dwfl_lineinfo(l, nullptr, &lineNo, nullptr, nullptr, nullptr)) file = s;
        line = lineNo > 0 ? uint32_t(lineNo) : 0;
    }

    // Inlined frames: the physical scopes around pc, innermost first; each inlined_subroutine is a
    // frame whose caller's line is the subroutine's call site.
    std::vector<Frame> frames;
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &bias);
    Dwarf_Die* scopes = nullptr;
    int nscopes = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
    Dwarf_Die* chain = nullptr;
    int nchain = 0;
    if (nscopes > 0) {
        // dwarf_getscopes continues from an inlined instance into its abstract definition's
        // scopes; the physical parents (the callers) come from the innermost scope's DIE.
        nchain = dwarf_getscopes_die(&scopes[0], &chain);
    }
    for (int i = 0; i < nchain; ++i) {
        Dwarf_Die* die = &chain[i];
        const int tag = dwarf_tag(die);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
        Frame f = base;
        f.file = file;
        f.line = line;
        if (tag == DW_TAG_inlined_subroutine) {
            f.inlined = true;
            f.function = dieFunctionName(die);
            frames.push_back(std::move(f));
            callSite(die, cu, file, line);
            continue;
        }
        if (f.function.empty()) f.function = dieFunctionName(die);
        frames.push_back(std::move(f));
        break;
    }
    std::free(chain);
    std::free(scopes);

    if (frames.empty() || frames.back().inlined) {
        // No DWARF scope (no debug info, or code the compiler did not describe): the symbol, with
        // the line table's answer if there was one.
        Frame f = base;
        f.file = file;
        f.line = line;
        frames.push_back(std::move(f));
    }
    frames.front().callee = demangle(entries->calleeOf(address).c_str());
    return frames;
}

SymbolCache::SymbolCache() = default;
SymbolCache::~SymbolCache() = default;

namespace {

// A Python frame of a stack: the function, file and line the shim resolved; "(python)" with no file
// when its definition did not arrive (a stream cut short).
Frame pythonFrame(const Process& proc, uint64_t pc)
{
    Frame f;
    f.address = pc;
    f.offset = wire::pyFrameId(pc);
    f.function = "(python)";
    auto fr = proc.pyFrames.find(wire::pyFrameId(pc));
    if (fr == proc.pyFrames.end()) return f;
    auto code = proc.pyCodes.find(fr->second.codeId);
    if (code == proc.pyCodes.end()) return f;
    f.function = code->second.function;
    f.file = code->second.file;
    f.line = fr->second.line > 0 ? uint32_t(fr->second.line) : 0;
    return f;
}

}  // namespace

void SymbolCache::symbolizeProcess(Process& proc)
{
    for (const auto& [id, pcs] : proc.stacks) {
        for (uint64_t pc : pcs) {
            if (proc.symbols.count(pc)) continue;
            if (wire::isPyFrame(pc)) {
                proc.symbols.emplace(pc, std::vector<Frame>{pythonFrame(proc, pc)});
                continue;
            }
            // The latest module first, as Symbolizer::moduleOf.
            const ModuleInfo* m = nullptr;
            for (auto it = proc.modules.rbegin(); it != proc.modules.rend(); ++it)
                if (pc >= it->start && pc < it->end) {
                    m = &*it;
                    break;
                }
            if (!m) {
                Frame f;
                f.address = pc;
                f.offset = pc;
                proc.symbols.emplace(pc, std::vector<Frame>{f});
                continue;
            }
            // One session per file, the file at bias 0: its frames depend on the offset alone.
            std::unique_ptr<Symbolizer>& file = m_files[m->path];
            if (!file) {
                ModuleInfo whole;
                whole.start = 0;
                whole.end = UINT64_MAX;
                whole.path = m->path;
                file = std::make_unique<Symbolizer>(std::vector<ModuleInfo>{whole});
            }
            std::vector<Frame> frames = file->symbolize(pc - m->bias);
            for (Frame& f : frames) f.address = pc;
            proc.symbols.emplace(pc, std::move(frames));
        }
    }
}

void symbolizeProcess(Process& proc)
{
    SymbolCache cache;
    cache.symbolizeProcess(proc);
}

}  // namespace gpuspy::collect
