// SIMCUDA_FAIL: makes chosen calls return a chosen CUresult without doing their work.
// SIMCUDA_STALL: holds chosen calls' threads up after they submitted their work.
// SIMCUDA_SIGNAL: sends chosen calls' threads a signal in the middle of the call, the model's lock held.
#include "sim.h"

#include <sys/syscall.h>
#include <unistd.h>
#include <csignal>
#include <ctime>

namespace simcuda {

namespace {

// The first of `rules` (indexes into `all`) this call is the chosen one of, or null. Counted per rule
// name, so 'cuLaunchKernel@3' counts plain and _ptsz launches together.
const CallRule* chosen(const std::vector<int>& rules, const std::vector<CallRule>& all, std::map<std::string, long>& counters)
{
    Lock g(bigLock());  // the model lock, which fork() handles
    const CallRule* hit = nullptr;
    std::map<std::string, bool> counted;
    for (int i : rules) {
        const CallRule& r = all[i];
        if (!counted[r.name]) {
            ++counters[r.name];
            counted[r.name] = true;
        }
        if (!hit && (r.nth == 0 || r.nth == counters[r.name])) hit = &r;
    }
    return hit;
}

}  // namespace

bool injectFault(ApiInfo& api, CUresult* rc)
{
    static auto& counters = *new std::map<std::string, long>;
    const CallRule* r = chosen(api.failRules, config().fails, counters);
    if (r) *rc = static_cast<CUresult>(r->value);
    return r != nullptr;
}

void injectStall(const ApiInfo& api)
{
    static auto& counters = *new std::map<std::string, long>;
    const CallRule* r = chosen(api.stallRules, config().stalls, counters);
    if (!r) return;
    timespec ts{time_t(r->value / 1000000000), long(r->value % 1000000000)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

void injectSignal(const ApiInfo& api)
{
    static auto& counters = *new std::map<std::string, long>;
    const CallRule* r = chosen(api.signalRules, config().signals, counters);
    if (!r) return;
    // Delivered before tgkill returns (the thread's own, unblocked signal): the handler runs here,
    // with the lock held until it returns, if it ever does.
    Lock g(bigLock());
    syscall(SYS_tgkill, getpid(), pid_t(syscall(SYS_gettid)), int(r->value));
}

}  // namespace simcuda
