// The symbolizer on this test binary itself (built with -g in the default RelWithDebInfo build):
// function, file:line, an always_inline helper as an inlined frame; libc (no debug info) and a
// missing file as module+offset.
#include "collector/symbolize/symbolize.h"

#include <gtest/gtest.h>

#include <elfutils/libdwfl.h>
#include <link.h>
#include <unistd.h>

#include <gelf.h>
#include <fcntl.h>

#include <climits>
#include <cstring>
#include <string>

using namespace gpuspy::collect;

namespace symtest {

// The return address of its call: a code address inside the caller, as a stack holds it.
__attribute__((noinline)) uint64_t returnAddressOfCall()
{
    uint64_t r = reinterpret_cast<uint64_t>(__builtin_return_address(0));
    asm volatile("" ::: "memory");
    return r;
}

constexpr uint32_t kTargetLine = __LINE__ + 3;
__attribute__((noinline)) uint64_t symbolTarget()
{
    uint64_t r = returnAddressOfCall();
    asm volatile("" ::: "memory");  // not a tail call: the return address stays in symbolTarget
    return r;
}

// always_inline is honoured at every optimisation level, -O0 included, and GCC describes the copy
// as a DW_TAG_inlined_subroutine whenever -g is on: the check needs no special flags on this file.
constexpr uint32_t kHelperLine = __LINE__ + 3;
__attribute__((always_inline)) inline uint64_t inlinedHelper()
{
    uint64_t r = returnAddressOfCall();
    asm volatile("" ::: "memory");
    return r;
}

constexpr uint32_t kCallerLine = __LINE__ + 3;
__attribute__((noinline)) uint64_t inlineCaller()
{
    uint64_t r = inlinedHelper();
    asm volatile("" ::: "memory");
    return r;
}

// The return address of a call through the PLT, as a stack holds it (a `call dwfl_version@PLT` the
// compiler cannot turn into anything else).
__attribute__((noinline)) uint64_t returnAddressOfPltCall()
{
    uint64_t r;
    asm volatile("xor %%edi, %%edi\n\t"
                 "call dwfl_version@PLT\n"
                 "1:\n\t"
                 "lea 1b(%%rip), %0"
                 : "=r"(r)
                 :
                 : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
    return r;
}

}  // namespace symtest

namespace {

// This process's module map, the way the shim builds it.
std::vector<ModuleInfo> currentModules()
{
    std::vector<ModuleInfo> out;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* arg) {
            auto* mods = static_cast<std::vector<ModuleInfo>*>(arg);
            ModuleInfo m;
            m.start = ~0ull;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
                uint64_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
                m.start = std::min(m.start, a);
                m.end = std::max(m.end, a + info->dlpi_phdr[i].p_memsz);
            }
            m.bias = info->dlpi_addr;
            m.path = info->dlpi_name ? info->dlpi_name : "";
            if (m.path.empty()) {
                char exe[PATH_MAX];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
                if (n > 0) m.path.assign(exe, size_t(n));
            }
            if (m.start < m.end) mods->push_back(m);
            return 0;
        },
        &out);
    return out;
}

const ModuleInfo* moduleOf(const std::vector<ModuleInfo>& mods, uint64_t address)
{
    for (const ModuleInfo& m : mods)
        if (address >= m.start && address < m.end) return &m;
    return nullptr;
}

bool endsWith(const std::string& s, const std::string& tail)
{
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST(Symbolize, FunctionFileAndLineInThisBinary)
{
    const uint64_t address = symtest::symbolTarget();
    auto mods = currentModules();
    Symbolizer sym(mods);
    std::vector<Frame> frames = sym.symbolize(address);
    ASSERT_FALSE(frames.empty());
    const Frame& f = frames.back();
    EXPECT_FALSE(f.inlined);
    EXPECT_EQ(f.function, "symtest::symbolTarget()");
    EXPECT_EQ(f.address, address);
    const ModuleInfo* m = moduleOf(mods, address);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(f.module, m->path);
    EXPECT_EQ(f.offset, address - m->bias);
    if (f.file.empty()) GTEST_SKIP() << "built without -g: no line information to check";
    EXPECT_TRUE(endsWith(f.file, "collector/symbolize/symbolize_test.cpp")) << f.file;
    EXPECT_GE(f.line, symtest::kTargetLine);
    EXPECT_LE(f.line, symtest::kTargetLine + 1);
    // Cached: the same answer again.
    std::vector<Frame> again = sym.symbolize(address);
    ASSERT_EQ(again.size(), frames.size());
    EXPECT_EQ(again.back().line, f.line);
}

TEST(Symbolize, InlinedFrameFirstThenRealFunction)
{
    const uint64_t address = symtest::inlineCaller();
    Symbolizer sym(currentModules());
    std::vector<Frame> frames = sym.symbolize(address);
    ASSERT_FALSE(frames.empty());
    if (frames.back().file.empty()) GTEST_SKIP() << "built without -g: no inline information";
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_TRUE(frames[0].inlined);
    EXPECT_EQ(frames[0].function, "symtest::inlinedHelper()");
    EXPECT_TRUE(endsWith(frames[0].file, "tests/unit/collector/symbolize/symbolize_test.cpp")) << frames[0].file;
    EXPECT_GE(frames[0].line, symtest::kHelperLine);
    EXPECT_LE(frames[0].line, symtest::kHelperLine + 1);
    EXPECT_FALSE(frames[1].inlined);
    EXPECT_EQ(frames[1].function, "symtest::inlineCaller()");
    EXPECT_EQ(frames[1].line, symtest::kCallerLine);  // the call site of the inlined helper
    EXPECT_EQ(frames[1].address, address);
    EXPECT_EQ(frames[1].module, frames[0].module);
}

TEST(Symbolize, ModuleWithoutDebugInfoGivesModuleAndOffset)
{
    // libdw itself (this test links it): Debian ships it stripped, its DWARF only in a -dbgsym
    // package from the debug archive, rarely installed (libc would do, but libc6-dbg is common).
    // .dynsym still names exported functions.
    const uint64_t address = reinterpret_cast<uint64_t>(&dwfl_begin) + 1;
    auto mods = currentModules();
    const ModuleInfo* m = moduleOf(mods, address);
    ASSERT_NE(m, nullptr);
    ASSERT_NE(m->path.find("libdw"), std::string::npos) << m->path;
    Symbolizer sym(mods);
    std::vector<Frame> frames = sym.symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    if (!frames[0].file.empty()) GTEST_SKIP() << "libdw has debug info here (libdw1-dbgsym)";
    EXPECT_EQ(frames[0].function, "dwfl_begin");
    EXPECT_EQ(frames[0].module, m->path);
    EXPECT_EQ(frames[0].offset, address - m->bias);
    EXPECT_EQ(frames[0].line, 0u);
    EXPECT_FALSE(frames[0].inlined);
}

TEST(Symbolize, MissingFileGivesModuleAndOffset)
{
    ModuleInfo gone;
    gone.start = 0x10000000;
    gone.end = 0x10010000;
    gone.bias = 0x10000000;
    gone.path = "/nonexistent/gpuspy/libgone.so";
    Symbolizer sym({gone});
    std::vector<Frame> frames = sym.symbolize(0x10000123);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].module, gone.path);
    EXPECT_EQ(frames[0].offset, 0x123u);
    EXPECT_TRUE(frames[0].function.empty());
    EXPECT_TRUE(frames[0].file.empty());

    // Outside every module, and address 0: the address itself.
    frames = sym.symbolize(0x20000000);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_TRUE(frames[0].module.empty());
    EXPECT_EQ(frames[0].offset, 0x20000000u);
    EXPECT_EQ(sym.symbolize(0).size(), 1u);
}

TEST(Symbolize, ProcessGetsEveryStackAddress)
{
    Process proc;
    proc.modules = currentModules();
    ModuleInfo gone{0x10000000, 0x10010000, 0x10000000, "/nonexistent/libgone.so"};
    proc.modules.push_back(gone);
    proc.stacks[1] = {symtest::symbolTarget(), symtest::inlineCaller()};
    proc.stacks[2] = {symtest::symbolTarget(), 0x10000040, 0x30000000};
    symbolizeProcess(proc);
    EXPECT_EQ(proc.symbols.size(), 4u);
    for (const auto& [id, pcs] : proc.stacks)
        for (uint64_t pc : pcs) {
            ASSERT_TRUE(proc.symbols.count(pc));
            EXPECT_FALSE(proc.symbols[pc].empty());
        }
    EXPECT_EQ(proc.symbols[0x10000040][0].offset, 0x40u);
}

// Two processes of one program, its files mapped elsewhere (ASLR), symbolized through one cache (one
// session per file): the same frames, each with its own process's address.
TEST(Symbolize, CacheSharesFilesAcrossProcessesAtOtherAddresses)
{
    constexpr uint64_t kShift = 0x100000000000ull;
    const uint64_t target = symtest::symbolTarget(), inlined = symtest::inlineCaller();
    Process a, b;
    a.modules = currentModules();
    for (ModuleInfo m : a.modules) {
        m.start += kShift;
        m.end += kShift;
        m.bias += kShift;
        b.modules.push_back(m);
    }
    a.stacks[1] = {target, inlined};
    b.stacks[1] = {target + kShift, inlined + kShift};
    SymbolCache cache;
    cache.symbolizeProcess(a);
    cache.symbolizeProcess(b);
    Process alone = a;
    alone.symbols.clear();
    symbolizeProcess(alone);
    for (uint64_t pc : {target, inlined}) {
        const std::vector<Frame>& fa = a.symbols.at(pc);
        const std::vector<Frame>& fb = b.symbols.at(pc + kShift);
        const std::vector<Frame>& f1 = alone.symbols.at(pc);
        ASSERT_EQ(fa.size(), fb.size());
        ASSERT_EQ(fa.size(), f1.size());
        for (size_t i = 0; i < fa.size(); ++i) {
            EXPECT_EQ(fa[i].function, fb[i].function);
            EXPECT_EQ(fa[i].function, f1[i].function);
            EXPECT_EQ(fa[i].line, fb[i].line);
            EXPECT_EQ(fa[i].file, fb[i].file);
            EXPECT_EQ(fa[i].offset, fb[i].offset);
            EXPECT_EQ(fa[i].inlined, fb[i].inlined);
            EXPECT_EQ(fa[i].address, pc);
            EXPECT_EQ(fb[i].address, pc + kShift);
        }
    }
    EXPECT_NE(a.symbols.at(target).back().function.find("symbolTarget"), std::string::npos);
    EXPECT_EQ(a.symbols.at(target).back().line, symtest::kTargetLine);
}

// Issue 18: a stack's Python frames (kPyFrameTag | id) take the function, file and line the shim sent
// (PyCodeDef, PyFrameDef), never a module lookup; one whose definition is missing reads "(python)".
TEST(Symbolize, PythonFramesFromTheirDefinitions)
{
    Process p;
    p.pyCodes[4] = PyCode{"Model.to_device", "/src/app.py", 7};
    p.pyFrames[9] = PyFrame{4, 8};
    p.pyFrames[10] = PyFrame{4, -1};
    const uint64_t known = gpuspy::wire::kPyFrameTag | 9, noLine = gpuspy::wire::kPyFrameTag | 10,
                   missing = gpuspy::wire::kPyFrameTag | 11;
    p.stacks[1] = {known, noLine, missing};
    symbolizeProcess(p);
    ASSERT_EQ(p.symbols[known].size(), 1u);
    EXPECT_EQ(p.symbols[known][0].function, "Model.to_device");
    EXPECT_EQ(p.symbols[known][0].file, "/src/app.py");
    EXPECT_EQ(p.symbols[known][0].line, 8u);
    EXPECT_EQ(p.symbols[known][0].module, "");
    EXPECT_EQ(p.symbols[noLine][0].line, 0u);
    EXPECT_EQ(p.symbols[missing][0].function, "(python)");
}

TEST(Symbolize, CallThroughThePltNamesItsCallee)
{
    // The call instruction before a return address names the function the binary asked the loader for
    // (Frame::callee), as the user wrote it: what a library's export tail-jumps into may be named otherwise.
    const uint64_t address = symtest::returnAddressOfPltCall();
    Symbolizer sym(currentModules());
    std::vector<Frame> frames = sym.symbolize(address);
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.front().callee, "dwfl_version");
    EXPECT_EQ(frames.back().function, "symtest::returnAddressOfPltCall()");
    // A return address after no direct call (the function's own entry + 1): no callee.
    EXPECT_EQ(sym.symbolize(reinterpret_cast<uint64_t>(&symtest::returnAddressOfPltCall) + 1).front().callee, "");
}

TEST(Symbolize, CodeAnExportJumpsIntoIsNamedByTheExport)
{
    // libcusolver's cusolverDnSsyevd is `jmp` into a function its stripped symbol table does not name: a
    // return address in that function is named by the export (issue 28: '(unnamed) (libcusolver.so.12)').
    const std::string path = "/usr/local/cuda/lib64/libcusolver.so.12";
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) GTEST_SKIP() << "no " << path;
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    ASSERT_NE(elf, nullptr);
    // The export's jmp rel32 target, read here from the file by hand.
    uint64_t target = 0;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn && !target; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM) continue;
        Elf_Data* d = elf_getdata(scn, nullptr);
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
            GElf_Sym s;
            gelf_getsym(d, int(i), &s);
            if (std::strcmp(elf_strptr(elf, sh.sh_link, s.st_name), "cusolverDnSsyevd") != 0) continue;
            size_t phnum = 0;
            elf_getphdrnum(elf, &phnum);
            for (size_t p = 0; p < phnum; ++p) {
                GElf_Phdr ph;
                gelf_getphdr(elf, int(p), &ph);
                if (ph.p_type != PT_LOAD || s.st_value < ph.p_vaddr || s.st_value >= ph.p_vaddr + ph.p_filesz) continue;
                uint8_t code[5];
                ASSERT_EQ(pread(fd, code, 5, off_t(ph.p_offset + s.st_value - ph.p_vaddr)), 5);
                if (code[0] != 0xe9) break;
                int32_t rel;
                std::memcpy(&rel, code + 1, 4);
                target = s.st_value + 5 + int64_t(rel);
            }
            break;
        }
    }
    elf_end(elf);
    close(fd);
    if (!target) GTEST_SKIP() << "this cuSOLVER's cusolverDnSsyevd is not a jmp";
    ModuleInfo whole;
    whole.start = 0;
    whole.end = UINT64_MAX;
    whole.path = path;
    Symbolizer sym({whole});
    // A return address a little inside the function the export jumps to.
    const std::vector<Frame> frames = sym.symbolize(target + 16);
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().function, "cusolverDnSsyevd");
    EXPECT_EQ(frames.back().module, path);
}
