// collector/findings/library_setup.cpp: library-setup-in-loop: a library's setup made again and again (a
// cuBLAS handle created and destroyed in every step, a cuFFT plan made per call, an NVRTC program compiled
// in the loop). Each one costs the library's own host work and the CUDA calls it makes (module loads,
// allocations, their synchronizations), usually far more than the work it sets up for; made once and
// kept, it costs that once. The invocations come from the stacks (LibraryRepeat, library_time.h); the
// saving is every invocation but the first of each such call, as far as gpuspy sees it (from the first
// CUDA call made inside to the last: the library's host work before and after those is not seen).
#include "collector/findings/rules.h"

#include <string_view>

namespace gpuspy::collect::detail::rules {

namespace {

// The library calls that set something up or tear it down, by their names' words: handles, plans,
// descriptors, generators, communicators, programs compiled at run time.
bool isSetupCall(std::string_view call)
{
    const std::string_view name = call.substr(0, call.find(' '));
    for (std::string_view w : {"Create", "Destroy", "Plan", "CommInit", "CommFinalize", "Compile"})
        if (name.find(w) != std::string_view::npos) return true;
    return false;
}

struct SetupCall {
    const LibraryRepeat* repeat = nullptr;
    std::string call, caller;  // "cublasCreate (libcublas.so.13)", "main (app.cu:38)"
};

}  // namespace

void librarySetupInLoop(Builder& b)
{
    const Context& cx = b.cx();
    std::map<size_t, std::vector<SetupCall>> byProcess;
    for (const LibraryRepeat& r : cx.libraryRepeats) {
        SetupCall sc{&r, {}, {}};
        for (uint32_t raw : r.rawSites) {
            const int site = raw < cx.rawSites.size() ? cx.rawSites[raw].site : kNoSite;
            if (site < 0 || size_t(site) >= cx.sites.size()) continue;
            const CallSite& s = cx.sites[size_t(site)];
            if (s.libraryCall.empty() || !s.libraryOwn.empty()) continue;
            sc.call = s.libraryCall;
            const size_t arrow = s.label.find(" \u2192 ");
            sc.caller = arrow == std::string::npos ? std::string() : s.label.substr(0, arrow);
            break;
        }
        if (!sc.call.empty() && isSetupCall(sc.call)) byProcess[r.proc].push_back(sc);
    }
    for (const auto& [proc, calls] : byProcess) {
        Matched m;
        uint64_t saving = 0, invocations = 0, ns = 0;
        std::string list;
        std::map<std::pair<uint32_t, uint32_t>, uint64_t> keys;
        const uint32_t pid = proc < cx.processes.size() ? cx.processes[proc].pid : 0;
        for (const SetupCall& sc : calls) {
            const LibraryRepeat& r = *sc.repeat;
            saving += r.ns - std::min(r.ns, r.firstNs);
            invocations += r.count;
            ns += r.ns;
            for (uint32_t raw : r.rawSites) {
                const RawSite& rs = cx.rawSites[raw];
                m.count += rs.count;
                m.hostNs += rs.ns;
                m.sites[raw] += rs.ns;
            }
            for (uint32_t stack : r.stacks) keys[{pid, stack}] = r.key;
            list += (list.empty() ? "" : "; ") + sc.call + " " + std::to_string(r.count) + " times" +
                    (sc.caller.empty() ? "" : " from " + sc.caller) + " (" + formatNs(r.ns) + ", the first " +
                    formatNs(r.firstNs) + ")";
        }
        std::string message =
            "A library's setup was made over and over: " + list + ". Each one repeats the library's own work (its "
            "handle, plan or program, the modules it loads, the memory it allocates and the waits that come with "
            "them) for work it could share. Make it once before the loop and keep it (one handle per thread or "
            "stream, one plan per shape, a program compiled once), and destroy it once at the end. Estimated saving: "
            "every setup but the first of each call, " + formatNs(saving) + " (as far as gpuspy sees a library call: "
            "from the first CUDA call made inside it to the last).";
        Finding& f = b.add("library-setup-in-loop", m, saving, std::move(message));
        f.count = invocations;
        f.ns = ns;
        f.invocationKeys = std::move(keys);
        f.evidence.push_back({"invocations", double(invocations)});
        f.evidence.push_back({"setup_ns", double(ns)});
    }
}

}  // namespace gpuspy::collect::detail::rules
