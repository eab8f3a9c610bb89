// shim/cpu_wait.cpp: how long the app's threads were ready to run but waited for a CPU, from the
// kernel's per-thread schedstat (its second field, run_delay, in nanoseconds). A thread that ends is
// read as it goes (threadExit); the threads alive at the end are read by the drain thread, which sends
// the sum as one CpuWait record before End. The reads open descriptors moved high (fds.cpp) and use
// no allocation: threads end inside the app's own code paths.
#include "shim/shim.h"

#include "wire/codec.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {

namespace {

std::atomic<uint64_t> g_endedWaitNs{0};
std::atomic<uint32_t> g_endedTasks{0};

// The whole (small) file at path into buf, NUL-terminated; false when it cannot be read.
bool readSmall(const char* path, char* buf, size_t cap)
{
    OwnedFd fd = fdOwn(open(path, O_RDONLY | O_CLOEXEC));
    if (fd.fd < 0) return false;
    ssize_t n;
    do n = read(fd.fd, buf, cap - 1);
    while (n < 0 && errno == EINTR);
    fdRelease(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

// schedstat: "<on-CPU ns> <run_delay ns> <timeslices>".
bool runDelayOf(const char* path, uint64_t* ns)
{
    char buf[128];
    if (!readSmall(path, buf, sizeof buf)) return false;
    unsigned long long onCpu = 0, delay = 0;
    if (std::sscanf(buf, "%llu %llu", &onCpu, &delay) != 2) return false;
    *ns = delay;
    return true;
}

// A thread of gpuspy's own (the drain thread names itself "gpuspy-drain").
bool ownThread(const char* tid)
{
    char path[64], comm[32];
    std::snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
    return readSmall(path, comm, sizeof comm) && std::strncmp(comm, "gpuspy-", 7) == 0;
}

struct LinuxDirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

}  // namespace

void noteThreadEndCpuWait()
{
    uint64_t ns = 0;
    if (!runDelayOf("/proc/thread-self/schedstat", &ns)) return;
    g_endedWaitNs.fetch_add(ns, std::memory_order_relaxed);
    g_endedTasks.fetch_add(1, std::memory_order_relaxed);
}

size_t encodeCpuWait(uint8_t* out, size_t cap)
{
    OwnedFd dir = fdOwn(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.fd < 0) return 0;  // no /proc: unknown, no record
    wire::CpuWaitBody b{};
    b.runDelayNs = g_endedWaitNs.load(std::memory_order_relaxed);
    b.tasks = g_endedTasks.load(std::memory_order_relaxed);
    const long self = syscall(SYS_gettid);
    alignas(8) char buf[4096];
    for (;;) {
        const long n = syscall(SYS_getdents64, dir.fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long at = 0; at < n;) {
            const auto* e = reinterpret_cast<const LinuxDirent64*>(buf + at);
            at += e->reclen;
            if (e->name[0] < '0' || e->name[0] > '9') continue;
            if (std::atol(e->name) == self || ownThread(e->name)) continue;
            char path[64];
            std::snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->name);
            uint64_t ns = 0;
            if (!runDelayOf(path, &ns)) continue;  // it ended meanwhile
            b.runDelayNs += ns;
            ++b.tasks;
        }
    }
    fdRelease(dir);
    return wire::encode(out, cap, b);
}

}  // namespace gpuspy::shim
