// collector/symbolize/entry_points.h: the names a caller used for the code its stack shows, from the
// machine code: the function a call instruction calls (through the PLT or the GOT: the name the user's
// binary asked the loader for), and the exported entry point that tail-jumps into unnamed code
// (libcusolver's cusolverDnSsyevd is `jmp` into a function its stripped symbol table does not name).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

struct Dwfl_Module;

namespace gpuspy::collect {

// One ELF module's entry points, read on first use and kept for the session of its module.
class EntryPoints {
public:
    explicit EntryPoints(Dwfl_Module* mod) : m_mod(mod) {}

    // The function the call instruction ending at `returnAddress` (a return address as captured)
    // calls, by the name the module's relocation or symbol table gives its target: "cufftExecR2C" for
    // a `call cufftExecR2C@plt`; "" for an indirect call, a target without a name, or no call there.
    std::string calleeOf(uint64_t returnAddress);

    // The exported function whose first instructions jump to the start of the function holding
    // `address` (its start by the module's unwind table, .eh_frame_hdr), where exactly one export does;
    // "" otherwise.
    std::string exportJumpingInto(uint64_t address);

private:
    bool read(uint64_t address, uint8_t* out, size_t n, bool code = true);
    std::string nameAt(uint64_t target);
    void loadRelocations();
    void loadExportJumps();
    void loadFunctionStarts();

    Dwfl_Module* m_mod;
    bool m_relocationsLoaded = false, m_jumpsLoaded = false, m_startsLoaded = false;
    std::unordered_map<uint64_t, std::string> m_slotNames;             // GOT slot -> symbol (runtime address)
    std::unordered_map<uint64_t, std::vector<std::string>> m_jumps;    // jump target -> exports jumping there
    std::vector<std::pair<uint64_t, uint64_t>> m_starts;               // function start -> its FDE, sorted
};

}  // namespace gpuspy::collect
