// shim/identity.cpp: who this process is, for the captures of several ranks and hosts read as one run:
// its launcher's rank variables and its host name, read when the library loads (a server may clear its
// environment later), the Identity record each stream carries with a pair of wall-clock and monotonic
// stamps, and the names of capture files (GPUSPY_OUTPUT's %h and %q{VAR}).
#include "shim/shim.h"

#include "wire/codec.h"

#include <sys/utsname.h>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {
namespace {

struct Ranks {
    int rank = -1, localRank = -1, worldSize = -1, localWorldSize = -1;
    wire::Launcher launcher = wire::Launcher::None;
};
Ranks g_ranks;
char g_host[sizeof(utsname::nodename)] = {0};

// A non-negative decimal variable; -1 when unset or not a number.
int envInt(const char* name)
{
    const char* v = name ? getenv(name) : nullptr;
    if (!v || !*v) return -1;
    char* end = nullptr;
    const long x = strtol(v, &end, 10);
    return *end || x < 0 || x > INT_MAX ? -1 : int(x);
}

uint64_t clockNs(clockid_t id)
{
    timespec ts;
    clock_gettime(id, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

}  // namespace

void identityLoad()
{
    // The first family whose rank is set wins: a job step launched by srun under an MPI wrapper has
    // both, and the launcher closest to the process sets the most specific ones first in this list.
    struct Family {
        wire::Launcher launcher;
        const char *rank, *localRank, *worldSize, *localWorldSize;
    };
    static const Family kFamilies[] = {
        {wire::Launcher::Torch, "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
        {wire::Launcher::OpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
         "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {wire::Launcher::Pmi, "PMI_RANK", nullptr, "PMI_SIZE", nullptr},
        {wire::Launcher::Slurm, "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", nullptr},
    };
    g_ranks = Ranks{};
    for (const Family& f : kFamilies) {
        const int rank = envInt(f.rank);
        if (rank < 0) continue;
        g_ranks = Ranks{rank, envInt(f.localRank), envInt(f.worldSize), envInt(f.localWorldSize), f.launcher};
        break;
    }
    utsname u{};
    if (uname(&u) == 0) {
        strncpy(g_host, u.nodename, sizeof g_host - 1);
        g_host[sizeof g_host - 1] = 0;
    }
}

const char* identityHost() { return g_host; }

void wallClockPair(uint64_t* realtimeNs, uint64_t* monotonicNs, uint64_t* errorNs)
{
    // Two monotonic readings around the realtime one; the tightest bracket of a few tries (a thread
    // preempted in the middle of one makes it wide).
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; ++i) {
        const uint64_t m0 = clockNs(CLOCK_MONOTONIC);
        const uint64_t r = clockNs(CLOCK_REALTIME);
        const uint64_t m1 = clockNs(CLOCK_MONOTONIC);
        if (m1 - m0 < best) {
            best = m1 - m0;
            *realtimeNs = r;
            *monotonicNs = m0 + (m1 - m0) / 2;
        }
    }
    *errorNs = best;
}

size_t encodeIdentity(uint8_t* out, size_t cap, wire::IdentityEdge edge)
{
    wire::IdentityBody b{};
    wallClockPair(&b.realtimeNs, &b.monotonicNs, &b.errorNs);
    b.rank = g_ranks.rank;
    b.localRank = g_ranks.localRank;
    b.worldSize = g_ranks.worldSize;
    b.localWorldSize = g_ranks.localWorldSize;
    b.launcher = g_ranks.launcher;
    b.edge = edge;
    b.length = uint32_t(strlen(g_host));
    return wire::encodeVar(out, cap, b, g_host, b.length);
}

bool expandOutputName(char* value, size_t cap)
{
    // In place, through a copy on the stack (the settings' buffers are 4 KiB).
    char in[4096];
    const size_t len = strlen(value);
    if (len >= sizeof in || !strchr(value, '%')) return true;
    memcpy(in, value, len + 1);
    size_t n = 0;
    auto put = [&](const char* s, size_t k) {
        if (n + k >= cap) return false;
        memcpy(value + n, s, k);
        n += k;
        return true;
    };
    for (const char* p = in; *p;) {
        bool ok = true;
        if (p[0] == '%' && p[1] == 'h') {
            ok = put(g_host, strlen(g_host));
            p += 2;
        } else if (p[0] == '%' && p[1] == 'q' && p[2] == '{' && strchr(p + 3, '}')) {
            const char* close = strchr(p + 3, '}');
            char name[256];
            const size_t k = size_t(close - (p + 3));
            const char* v = nullptr;
            if (k < sizeof name) {
                memcpy(name, p + 3, k);
                name[k] = 0;
                v = getenv(name);
            }
            if (v) ok = put(v, strlen(v));
            p = close + 1;
        } else {
            ok = put(p, 1);  // %p stays, for the pid of the process that opens the file (a forked child's own)
            ++p;
        }
        if (!ok) {
            memcpy(value, in, len + 1);
            return false;
        }
    }
    value[n] = 0;
    return true;
}

}  // namespace gpuspy::shim
