// collector/symbolize/symbolize.h: return addresses to functions, source lines and inlined frames (elfutils
// libdwfl), the only collector code that reads ELF and DWARF.
#pragma once

#include "collector/model/model.h"
#include "collector/symbolize/entry_points.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct Dwfl;

namespace gpuspy::collect {

// Symbolizes addresses of one process, from its module map, while the binaries are still on disk.
// Not thread-safe (libdwfl sessions are not); one per process.
class Symbolizer {
public:
    explicit Symbolizer(std::vector<ModuleInfo> modules);  // one process's module map
    ~Symbolizer();
    Symbolizer(const Symbolizer&) = delete;
    Symbolizer& operator=(const Symbolizer&) = delete;

    // Inlined frames first (innermost), then the real function; never throws, never empty (falls
    // back to module+offset). `address` is a return address as captured: file:line are those of
    // the call instruction before it.
    std::vector<Frame> symbolize(uint64_t address);

private:
    std::vector<Frame> lookup(uint64_t address);
    const ModuleInfo* moduleOf(uint64_t address) const;

    std::vector<ModuleInfo> m_modules;
    Dwfl* m_dwfl = nullptr;
    std::unordered_map<uint64_t, std::vector<Frame>> m_cache;
    std::unordered_map<Dwfl_Module*, std::unique_ptr<EntryPoints>> m_entryPoints;
};

// Symbolizes many processes with one session per binary, kept for the cache's life: the hundreds of
// short-lived workers of one program (each mapping the same files at other addresses) are read once,
// not once each (collect took 12.8 s to finish after 300 of them). A frame depends only on the file and
// the offset in it; a file that changes on disk while the cache lives is not read again.
class SymbolCache {
public:
    SymbolCache();
    ~SymbolCache();
    SymbolCache(const SymbolCache&) = delete;
    SymbolCache& operator=(const SymbolCache&) = delete;

    // Fills proc.symbols for every address in proc.stacks.
    void symbolizeProcess(Process& proc);

private:
    std::unordered_map<std::string, std::unique_ptr<Symbolizer>> m_files;
};

// Fills proc.symbols for every address in proc.stacks (a cache of its own).
void symbolizeProcess(Process& proc);

}  // namespace gpuspy::collect
