// CUDA_VISIBLE_DEVICES as the real driver reads it: which of the SIMCUDA_DEVICES physical devices this process
// sees, in what order. The value is a comma-separated list; each entry is a physical ordinal (decimal) or a GPU
// UUID prefix `GPU-<hex>` (as `nvidia-smi -L` prints them, dashes included, matched case-insensitively; the
// prefix must name exactly one device). The entries listed become ordinals 0..k-1 in list order. The first
// invalid entry (not a number, out of range, a MIG-... name, no or several UUID matches, a device listed already)
// ends the list: the devices before it stay visible, the ones after it are ignored. An empty value, or a first
// entry that is invalid, leaves no device (cuInit then returns CUDA_ERROR_NO_DEVICE). Unset: every device, in
// physical order.
#include "sim.h"

#include <cctype>
#include <cstdio>
#include <cstring>

namespace simcuda {

CUuuid physicalUuid(int physical)
{
    const unsigned char bytes[16] = {0x5c, 0x1d, 0xc0, 0xda, 'g', 'p', 'u', 's', 'p', 'y', 0, 0, 0, 0, 0x13,
                                     static_cast<unsigned char>(physical)};
    CUuuid u;
    memcpy(u.bytes, bytes, 16);
    return u;
}

std::string uuidText(const CUuuid& u)
{
    const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
    char s[48];
    snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return s;
}

namespace {

std::string trimmed(const std::string& s)
{
    size_t a = 0, b = s.size();
    while (a < b && isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

// The physical ordinal an entry names, or -1 if it is invalid.
int entryDevice(const std::string& entry, int physicalCount)
{
    if (entry.empty()) return -1;
    if (entry.size() > 4 && strncasecmp(entry.c_str(), "GPU-", 4) == 0) {
        int found = -1;
        for (int d = 0; d < physicalCount; ++d) {
            const std::string id = uuidText(physicalUuid(d));
            if (entry.size() <= id.size() && strncasecmp(id.c_str(), entry.c_str(), entry.size()) == 0) {
                if (found >= 0) return -1;  // ambiguous prefix
                found = d;
            }
        }
        return found;
    }
    long n = 0;
    for (char c : entry) {
        if (!isdigit(static_cast<unsigned char>(c))) return -1;
        n = n * 10 + (c - '0');
        if (n >= physicalCount) return -1;
    }
    return static_cast<int>(n);
}

}  // namespace

std::vector<int> parseVisibleDevices(const char* value, int physicalCount)
{
    std::vector<int> out;
    if (!value) {
        for (int d = 0; d < physicalCount; ++d) out.push_back(d);
        return out;
    }
    std::string rest = value;
    if (trimmed(rest).empty()) return out;
    for (;;) {
        const size_t comma = rest.find(',');
        const int d = entryDevice(trimmed(rest.substr(0, comma)), physicalCount);
        bool seen = false;
        for (int v : out) seen = seen || v == d;
        if (d < 0 || seen) break;
        out.push_back(d);
        if (comma == std::string::npos) break;
        rest = rest.substr(comma + 1);
    }
    return out;
}

}  // namespace simcuda
