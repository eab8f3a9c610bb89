// collector/findings/failed_calls.cpp: calls-failed: a process every one of whose recorded CUDA calls failed did no
// GPU work, and its report would otherwise look empty or healthy. The finding names the first failing call,
// its error and its site (the one to fix: the others usually follow from it), and the failures by API.
#include "collector/findings/rules.h"

#include "collector/model/cuda_results.h"

namespace gpuspy::collect::detail::rules {

std::string errorHint(int32_t code)
{
    switch (code) {
    case 1:  // CUDA_ERROR_INVALID_VALUE
        return "an argument is not one the call accepts (a null pointer, an attribute, limit or size out of range)";
    case 3:  // CUDA_ERROR_NOT_INITIALIZED
        return "the driver was not initialised (cuInit not called, or it failed)";
    case 100:  // CUDA_ERROR_NO_DEVICE
        return "the driver sees no GPU (CUDA_VISIBLE_DEVICES, the container's devices)";
    case 101:  // CUDA_ERROR_INVALID_DEVICE
        return "the device ordinal is not one the driver sees";
    case 201:  // CUDA_ERROR_INVALID_CONTEXT
        return "no context was current on the calling thread (cudaSetDevice or cuCtxSetCurrent first), or the "
               "call was passed a context the driver does not know: a binding written for an older CUDA may call an "
               "entry point whose signature changed (CUDA 13's cuCtxGetDevice_v2 and cuCtxSynchronize_v2 take a context)";
    case 400:  // CUDA_ERROR_INVALID_HANDLE
        return "the call was passed a handle (module, function, event, stream, link state) the driver does not know, or one "
               "already destroyed";
    case 500:  // CUDA_ERROR_NOT_FOUND
        return "no symbol of that name: the module has no global or function so named (a name mangled differently, or a "
               "module built without it)";
    case 209:  // CUDA_ERROR_NO_BINARY_FOR_GPU
        return "the module holds no code for this GPU's architecture: build for it (-gencode) or ship PTX";
    case 222:  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        return "the PTX is newer than this driver can compile: build with an older toolkit or update the driver";
    case 35:  // CUDA_ERROR_STUB_LIBRARY
        return "the program loaded the toolkit's stub libcuda.so, not the driver's";
    default:
        return {};
    }
}

void addFailedCall(FailAcc& a, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    ++a.calls;
    const bool failed = !succeeded(c) && !(ci.api->query && c.result == kCudaErrorNotReady);
    if (c.beginNs >= a.lastNs) {
        a.lastNs = c.beginNs;
        a.lastFailed = failed;
        a.lastApi = ci.api->name;
        a.lastCode = c.result;
        a.lastRawSite = ci.rawSite;
        a.lastTid = c.tid;
    }
    if (!failed) return;
    ++a.failed;
    ++a.byApi[ci.api->name][c.result];
    a.failedCalls.add(ci);
    if (c.beginNs < a.firstNs) {
        a.firstNs = c.beginNs;
        a.firstApi = ci.api->name;
        a.firstCode = c.result;
        a.firstRawSite = ci.rawSite;
        a.firstTid = c.tid;
    }
}

namespace {

std::string siteLabel(const Context& cx, uint32_t rawSite, int* siteOut)
{
    const int site = rawSite < cx.rawSites.size() ? cx.rawSites[rawSite].site : kNoSite;
    *siteOut = site;
    return site >= 0 && size_t(site) < cx.sites.size() ? " at " + cx.sites[size_t(site)].label : "";
}

// The failing call's site first among the finding's: it is the one to fix.
void siteFirst(Finding& f, int site)
{
    if (site < 0) return;
    f.callsites.erase(std::remove(f.callsites.begin(), f.callsites.end(), uint32_t(site)), f.callsites.end());
    f.callsites.insert(f.callsites.begin(), uint32_t(site));
}

// A process that ran no GPU work and whose last CUDA call failed gave up on the GPU there (a binding
// that calls an entry point with the wrong signature, a module without code for the GPU): the calls
// before it succeeded, so "every call failed" does not hold, but the report would otherwise look
// empty. Teardown errors (the driver already deinitialised at exit) are not a failure of the work.
void lastCallFailed(Builder& b, uint32_t pid, const FailAcc& a, bool several)
{
    constexpr int32_t kDeinitialized = 4;
    const Context& cx = b.cx();
    if (!a.lastFailed || a.lastCode == kDeinitialized) return;
    for (const ProcessSummary& p : cx.processes)
        if (p.pid == pid && p.deviceOps) return;
    int site = kNoSite;
    const std::string where = siteLabel(cx, a.lastRawSite, &site);
    const std::string hint = errorHint(a.lastCode);
    const uint64_t before = a.calls - 1;
    Finding& f = b.add("calls-failed", a.failedCalls, 0,
                       "No GPU work ran " + std::string(several ? "in pid " + std::to_string(pid) + " " : "") +
                           "and its last CUDA call failed: " + apiDisplay(cx, a.lastApi) + where + " (thread " +
                           std::to_string(a.lastTid) + ") returned " + cudaResultName(a.lastCode) + " (" +
                           std::to_string(a.lastCode) + ")" + (hint.empty() ? std::string() : ": " + hint) + ". " +
                           "Of the " + std::to_string(before) + " call" + (before == 1 ? "" : "s") + " before it, " +
                           std::to_string(a.failed - 1) + " failed: the program gave up on the GPU at this call. Fix "
                           "it first.");
    f.severity = "high";
    siteFirst(f, site);
    f.evidence = {{"failed_calls", double(a.failed)}, {"calls", double(a.calls)}, {"last_error", double(a.lastCode)}};
}

}  // namespace

void callsFailed(Builder& b)
{
    const Context& cx = b.cx();
    const bool several = cx.findings.failures.size() > 1;
    for (const auto& [pid, a] : cx.findings.failures) {
        if (!a.calls) continue;
        if (a.failed != a.calls) {
            lastCallFailed(b, pid, a, several);
            continue;
        }
        int site = kNoSite;
        const std::string where = siteLabel(cx, a.firstRawSite, &site);
        std::string byApi;
        for (const auto& [api, codes] : a.byApi)
            for (const auto& [code, n] : codes)
                byApi += (byApi.empty() ? "" : ", ") + apiDisplay(cx, api) + " " + std::to_string(n) + "x " + cudaResultName(code);
        const std::string hint = errorHint(a.firstCode);
        Finding& f = b.add("calls-failed", a.failedCalls, 0,
                           "Every CUDA call " + std::string(several ? "of pid " + std::to_string(pid) + " " : "") +
                               "that gpuspy recorded failed (" + std::to_string(a.failed) + " calls), so no GPU work ran. The first, " +
                               apiDisplay(cx, a.firstApi) + where + " (thread " + std::to_string(a.firstTid) + "), returned " +
                               cudaResultName(a.firstCode) + " (" + std::to_string(a.firstCode) + ")" +
                               (hint.empty() ? std::string() : ": " + hint) + ". Fix that one first: the later failures (" +
                               byApi + ") often follow from it.");
        f.severity = "high";
        siteFirst(f, site);
        f.evidence = {{"failed_calls", double(a.failed)}, {"first_error", double(a.firstCode)}};
    }
}

}  // namespace gpuspy::collect::detail::rules
