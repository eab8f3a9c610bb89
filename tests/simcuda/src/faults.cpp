// SIMCUDA_FAIL: makes chosen calls return a chosen CUresult without doing their work.
#include "sim.h"

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

}  // namespace simcuda
