// SIMCUDA_FAIL: makes chosen calls return a chosen CUresult without doing their work.
// SIMCUDA_STALL: holds chosen calls' threads up after they submitted their work.
#include "sim.h"

#include <ctime>

namespace simcuda {

bool injectFault(ApiInfo& api, CUresult* rc)
{
    // Counted per rule name, so 'cuLaunchKernel@3' counts plain and _ptsz launches together.
    static auto& counters = *new std::map<std::string, long>;
    Lock g(bigLock());  // the model lock, which fork() handles
    bool hit = false;
    std::map<std::string, bool> counted;
    for (int i : api.failRules) {
        const FailRule& r = config().fails[i];
        if (!counted[r.name]) {
            ++counters[r.name];
            counted[r.name] = true;
        }
        if (!hit && (r.nth == 0 || r.nth == counters[r.name])) {
            *rc = r.rc;
            hit = true;
        }
    }
    return hit;
}

void injectStall(const ApiInfo& api)
{
    static auto& counters = *new std::map<std::string, long>;
    Ns ns = 0;
    {
        Lock g(bigLock());
        std::map<std::string, bool> counted;
        for (int i : api.stallRules) {
            const StallRule& r = config().stalls[i];
            if (!counted[r.name]) {
                ++counters[r.name];
                counted[r.name] = true;
            }
            if (!ns && (r.nth == 0 || r.nth == counters[r.name])) ns = r.ns;
        }
    }
    if (!ns) return;
    timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

}  // namespace simcuda
