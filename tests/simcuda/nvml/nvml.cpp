// A simulated NVML (libnvidia-ml.so.1), built beside the simulated libcuda.so.1: the devices NCCL's init asks
// about, matching the simulated driver's (SIMCUDA_DEVICES of them, CC 9.0, PCI bus 0x41+i on domain 0, no
// NVLink, peer access between distinct devices). NVML's header is not in the CUDA toolkit: the types below are
// the ABI's (nvml.h of driver 580), reduced to what these entry points use.
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

enum Ret {
    kSuccess = 0,
    kUninitialized = 1,
    kInvalidArgument = 2,
    kNotSupported = 3,
    kNotFound = 6,
};

struct Device {
    unsigned index;
};

constexpr unsigned kMaxDevices = 16;
// Handles are addresses in this array; written once, before any caller can see them (no races between threads).
const Device* devices()
{
    static const auto* d = [] {
        auto* a = new Device[kMaxDevices];  // leaked: NCCL may call from exit handlers
        for (unsigned i = 0; i < kMaxDevices; ++i) a[i].index = i;
        return a;
    }();
    return d;
}

// SIMCUDA_DEVICES as the simulated driver reads it (1..16, default 1).
unsigned deviceCount()
{
    const char* e = getenv("SIMCUDA_DEVICES");
    const long n = e ? strtol(e, nullptr, 10) : 1;
    return n >= 1 && n <= static_cast<long>(kMaxDevices) ? static_cast<unsigned>(n) : 1;
}

const Device* asDevice(void* h)
{
    const auto* d = static_cast<const Device*>(h);
    return d >= devices() && d < devices() + deviceCount() ? d : nullptr;
}

void* handle(unsigned i) { return const_cast<Device*>(&devices()[i]); }

unsigned pciBus(const Device* d) { return 0x41 + d->index; }

struct PciInfo {  // nvmlPciInfo_t
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};

struct FieldValue {  // nvmlFieldValue_t
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    int nvmlReturn;
    unsigned long long value;
};

}  // namespace

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

NVML_EXPORT int nvmlInit_v2() { return kSuccess; }
NVML_EXPORT int nvmlInit() { return kSuccess; }
NVML_EXPORT int nvmlInitWithFlags(unsigned) { return kSuccess; }
NVML_EXPORT int nvmlShutdown() { return kSuccess; }

NVML_EXPORT const char* nvmlErrorString(int r)
{
    switch (r) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    default: return "Unknown Error";
    }
}

NVML_EXPORT int nvmlDeviceGetCount_v2(unsigned* n)
{
    if (!n) return kInvalidArgument;
    *n = deviceCount();
    return kSuccess;
}
NVML_EXPORT int nvmlDeviceGetCount(unsigned* n) { return nvmlDeviceGetCount_v2(n); }

NVML_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev)
{
    if (!dev || i >= deviceCount()) return kInvalidArgument;
    *dev = handle(i);
    return kSuccess;
}
NVML_EXPORT int nvmlDeviceGetHandleByIndex(unsigned i, void** dev) { return nvmlDeviceGetHandleByIndex_v2(i, dev); }

// "0000:41:00.0" or "00000000:41:00.0", any case, as cuDeviceGetPCIBusId writes it.
NVML_EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char* busId, void** dev)
{
    unsigned domain = 0, bus = 0, device = 0, fn = 0;
    if (!busId || !dev || sscanf(busId, "%x:%x:%x.%x", &domain, &bus, &device, &fn) != 4) return kInvalidArgument;
    for (unsigned i = 0; i < deviceCount(); ++i) {
        if (domain == 0 && device == 0 && fn == 0 && bus == pciBus(&devices()[i])) {
            *dev = handle(i);
            return kSuccess;
        }
    }
    return kNotFound;
}
NVML_EXPORT int nvmlDeviceGetHandleByPciBusId(const char* busId, void** dev)
{
    return nvmlDeviceGetHandleByPciBusId_v2(busId, dev);
}

NVML_EXPORT int nvmlDeviceGetIndex(void* h, unsigned* index)
{
    const Device* d = asDevice(h);
    if (!d || !index) return kInvalidArgument;
    *index = d->index;
    return kSuccess;
}

NVML_EXPORT int nvmlDeviceGetPciInfo_v3(void* h, PciInfo* p)
{
    const Device* d = asDevice(h);
    if (!d || !p) return kInvalidArgument;
    memset(p, 0, sizeof *p);
    p->bus = pciBus(d);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    return kSuccess;
}

NVML_EXPORT int nvmlDeviceGetCudaComputeCapability(void* h, int* major, int* minor)
{
    if (!asDevice(h) || !major || !minor) return kInvalidArgument;
    *major = 9;
    *minor = 0;
    return kSuccess;
}

// No NVLink: every link reads as disabled (NVML_FEATURE_DISABLED), capabilities as absent.
NVML_EXPORT int nvmlDeviceGetNvLinkState(void* h, unsigned, int* active)
{
    if (!asDevice(h) || !active) return kInvalidArgument;
    *active = 0;
    return kSuccess;
}
NVML_EXPORT int nvmlDeviceGetNvLinkCapability(void* h, unsigned, int, unsigned* result)
{
    if (!asDevice(h) || !result) return kInvalidArgument;
    *result = 0;
    return kSuccess;
}
NVML_EXPORT int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* h, unsigned, PciInfo*)
{
    return asDevice(h) ? kNotSupported : kInvalidArgument;
}
NVML_EXPORT int nvmlDeviceGetNvLinkRemotePciInfo(void* h, unsigned link, PciInfo* p)
{
    return nvmlDeviceGetNvLinkRemotePciInfo_v2(h, link, p);
}

// Peer access as the simulated driver's cuDeviceCanAccessPeer: between distinct devices (NVML_P2P_STATUS_OK = 0,
// NVML_P2P_STATUS_NOT_SUPPORTED = 5 for a device with itself).
NVML_EXPORT int nvmlDeviceGetP2PStatus(void* a, void* b, int, int* status)
{
    if (!asDevice(a) || !asDevice(b) || !status) return kInvalidArgument;
    *status = a == b ? 5 : 0;
    return kSuccess;
}

// No field is supported: each value carries NVML_ERROR_NOT_SUPPORTED, the call itself succeeds (as NVML does).
NVML_EXPORT int nvmlDeviceGetFieldValues(void* h, int count, FieldValue* values)
{
    if (!asDevice(h) || count < 0 || (count && !values)) return kInvalidArgument;
    for (int i = 0; i < count; ++i) {
        values[i].nvmlReturn = kNotSupported;
        values[i].value = 0;
    }
    return kSuccess;
}

// Multi-node NVLink fabric, platform info and confidential computing: not on this machine.
NVML_EXPORT int nvmlDeviceGetGpuFabricInfoV(void* h, void*) { return asDevice(h) ? kNotSupported : kInvalidArgument; }
NVML_EXPORT int nvmlDeviceGetPlatformInfo(void* h, void*) { return asDevice(h) ? kNotSupported : kInvalidArgument; }
NVML_EXPORT int nvmlSystemGetConfComputeState(unsigned* state)  // {environment, ccFeature, devToolsMode}: all off
{
    if (!state) return kInvalidArgument;
    memset(state, 0, 3 * sizeof(unsigned));
    return kSuccess;
}
NVML_EXPORT int nvmlSystemGetConfComputeSettings(void*) { return kNotSupported; }
