// Reads the SIMCUDA_* environment once into the Config every other part of the driver consults.
#include "sim.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace simcuda {
namespace {

std::vector<std::string> splitList(const char* s)
{
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = s; *p; ++p) {
        if (*p == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += *p;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// "key=value" with the value taken after the LAST '=', since a kernel regex may itself contain '='.
bool splitKeyValue(const std::string& item, std::string* key, std::string* value)
{
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0) return false;
    *key = item.substr(0, eq);
    *value = item.substr(eq + 1);
    return true;
}

void warn(const char* var, const std::string& item)
{
    logLine("ignoring malformed %s entry '%s'", var, item.c_str());
}

void parseKernelRules(Config& c, const char* s)
{
    for (const std::string& item : splitList(s)) {
        std::string key, value;
        if (!splitKeyValue(item, &key, &value)) { warn("SIMCUDA_KERNEL_NS", item); continue; }
        try {
            c.kernelRules.push_back({std::regex(key), std::stoll(value)});
        } catch (const std::exception&) {
            warn("SIMCUDA_KERNEL_NS", item);
        }
    }
}

void parseHostCost(Config& c, const char* s)
{
    if (strcmp(s, "0") == 0) { c.hostCostOn = false; return; }
    for (const std::string& item : splitList(s)) {
        std::string key, value;
        if (!splitKeyValue(item, &key, &value)) { warn("SIMCUDA_HOST_COST", item); continue; }
        c.hostCost[baseName(key)] = std::atoll(value.c_str());
    }
}

// name@N=value or name@*=value (SIMCUDA_FAIL: the CUresult; SIMCUDA_STALL: how long, in ns, the thread
// is held up after the call submitted its work, as one preempted right after a driver's doorbell write:
// a profiler sees the call return late; SIMCUDA_SIGNAL: the signal sent to the calling thread inside
// the call).
void parseCallRules(std::vector<CallRule>& out, const char* var, const char* s, bool positive)
{
    for (const std::string& item : splitList(s)) {
        std::string key, value;
        const size_t at = item.find('@');
        if (at == std::string::npos || !splitKeyValue(item.substr(at + 1), &key, &value)) { warn(var, item); continue; }
        CallRule r;
        r.name = item.substr(0, at);
        r.nth = key == "*" ? 0 : std::atol(key.c_str());
        r.value = std::atoll(value.c_str());
        if ((key != "*" && r.nth <= 0) || (positive && r.value <= 0)) { warn(var, item); continue; }
        out.push_back(r);
    }
}

void parseBandwidth(Config& c, const char* s)
{
    for (const std::string& item : splitList(s)) {
        std::string key, value;
        if (!splitKeyValue(item, &key, &value)) { warn("SIMCUDA_BANDWIDTH", item); continue; }
        const double v = std::atof(value.c_str());
        if (v <= 0) { warn("SIMCUDA_BANDWIDTH", item); continue; }
        if (key == "pinned") c.bwPinned = v;
        else if (key == "pageable") c.bwPageable = v;
        else if (key == "DtoD") c.bwDtoD = v;
        else if (key == "PtoP") c.bwPtoP = v;
        else if (key == "HtoH") c.bwHtoH = v;
        else if (key == "memset") c.bwMemset = v;
        else warn("SIMCUDA_BANDWIDTH", item);
    }
}

Config* load()
{
    auto* c = new Config;  // never destroyed: cudart calls the driver from its exit handlers
    if (const char* e = getenv("SIMCUDA_DEVICES")) c->devices = std::max(1, std::min(16, atoi(e)));
    const char* visible = getenv("CUDA_VISIBLE_DEVICES");
    c->visibleSet = visible != nullptr;
    c->visible = parseVisibleDevices(visible, c->devices);
    if (const char* e = getenv("SIMCUDA_LAUNCH_LATENCY_NS")) c->launchLatency = atoll(e);
    if (const char* e = getenv("SIMCUDA_GRAPH_NODE_NS")) c->graphNodeCost = atoll(e);
    if (const char* e = getenv("SIMCUDA_NCCL_RANKS")) c->ncclRanks = atoi(e);
    if (const char* e = getenv("SIMCUDA_NCCL_JOB")) c->ncclJob = e;
    if (const char* e = getenv("SIMCUDA_KERNEL_DEFAULT_NS")) c->kernelDefault = atoll(e);
    if (const char* e = getenv("SIMCUDA_KERNEL_NS")) parseKernelRules(*c, e);
    if (const char* e = getenv("SIMCUDA_BANDWIDTH")) parseBandwidth(*c, e);
    if (const char* e = getenv("SIMCUDA_HOST_COST")) parseHostCost(*c, e);
    if (const char* e = getenv("SIMCUDA_FAIL")) parseCallRules(c->fails, "SIMCUDA_FAIL", e, false);
    if (const char* e = getenv("SIMCUDA_STALL")) parseCallRules(c->stalls, "SIMCUDA_STALL", e, true);
    if (const char* e = getenv("SIMCUDA_SIGNAL")) parseCallRules(c->signals, "SIMCUDA_SIGNAL", e, true);
    if (const char* e = getenv("SIMCUDA_TRACE")) c->tracePath = e;
    if (const char* e = getenv("SIMCUDA_TRACE_CALLS")) c->traceCalls = atoi(e) != 0;
    if (const char* e = getenv("SIMCUDA_QUIET")) c->quiet = atoi(e) != 0;
    return c;
}

}  // namespace

const Config& config()
{
    static const Config* c = load();
    return *c;
}

std::string baseName(const std::string& abiName)
{
    std::string n = abiName;
    for (const char* suffix : {"_ptsz", "_ptds"}) {
        const size_t len = strlen(suffix);
        if (n.size() > len && n.compare(n.size() - len, len, suffix) == 0) n.resize(n.size() - len);
    }
    // _v2 .. _v9: the versioned ABI of the same call
    if (n.size() > 3 && n[n.size() - 3] == '_' && n[n.size() - 2] == 'v' && isdigit(static_cast<unsigned char>(n.back())))
        n.resize(n.size() - 3);
    return n;
}

}  // namespace simcuda
