// shim/fds.cpp: the shim's own descriptors, kept out of the app's way: moved above a high floor (the
// app's open/socket/accept take the lowest free numbers, and servers dup2 onto low ones), and known by
// what they refer to (device and inode), so that a number the app took over (dup2 onto it, closefrom
// then a new open) is noticed before gpuspy writes, and never written to or closed.
// Also libunwind's memory-validation pipe: libunwind 1.6 makes it with pipe2 at its first unwind and
// keeps the numbers for the life of the process; pipe2, interposed (preload.cpp), moves it high when
// libunwind runs on gpuspy's behalf (OwnPipesScope).
#include "shim/shim.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuspy::shim {
namespace {

thread_local int t_ownPipes GS_TLS = 0;  // > 0: this thread is inside libunwind on gpuspy's behalf

// Where the shim's descriptors go: an eighth below min(RLIMIT_NOFILE, 1024), so that an app near a
// small limit still finds its low numbers, and a huge limit does not grow the kernel's fd table.
int fdFloor()
{
    rlimit rl{};
    rlim_t top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top) top = rl.rlim_cur;
    const int hi = int(top);
    return hi - hi / 8;
}

}  // namespace

int fdMoveHigh(int fd)
{
    if (fd < 0) return fd;
    const int savedErrno = errno;
    for (int floor = fdFloor(); floor > fd && floor >= 3; floor /= 2) {
        const int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
        if (high >= 0) {
            // The low number is closed only while it is still what we duplicated: the app may
            // have taken it in the meantime.
            struct stat a{}, b{};
            if (fstat(high, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) close(fd);
            errno = savedErrno;
            return high;
        }
    }
    errno = savedErrno;
    return fd;  // no room above it: stays where it is, still checked by identity
}

OwnedFd fdOwn(int fd)
{
    // The identity of what we opened, taken before the move: if the app takes the new number at once,
    // the first check finds it changed (rather than taking the app's file for ours).
    OwnedFd o;
    struct stat st{};
    if (fd >= 0 && fstat(fd, &st) == 0) {
        o.dev = uint64_t(st.st_dev);
        o.ino = uint64_t(st.st_ino);
    }
    o.fd = fdMoveHigh(fd);
    return o;
}

bool fdStillOurs(const OwnedFd& o)
{
    if (o.fd < 0) return false;
    const int savedErrno = errno;
    struct stat st{};
    const bool same = fstat(o.fd, &st) == 0 && uint64_t(st.st_dev) == o.dev && uint64_t(st.st_ino) == o.ino;
    errno = savedErrno;
    return same;
}

void fdRelease(OwnedFd& o)
{
    if (fdStillOurs(o)) close(o.fd);
    o = OwnedFd{};
}

// libunwind's validation pipe: where libunwind keeps its two numbers (the array its pipe2 call
// filled), and what they referred to. Written under OwnPipesScope (an app thread unwinding), read by
// the drain thread.
std::atomic<int*> g_unwindPipe{nullptr};
OwnedFd g_unwindPipeIds[2];
std::atomic<uint32_t> g_unwindPipeGen{0};  // odd while the identities are being written

void noteUnwindPipe(int* fds)
{
    g_unwindPipeGen.fetch_add(1, std::memory_order_acq_rel);
    for (int i = 0; i < 2; ++i) {
        OwnedFd o;
        struct stat st{};
        o.fd = fds[i];
        if (fstat(o.fd, &st) == 0) {
            o.dev = uint64_t(st.st_dev);
            o.ino = uint64_t(st.st_ino);
        }
        g_unwindPipeIds[i] = o;
    }
    g_unwindPipe.store(fds, std::memory_order_release);
    g_unwindPipeGen.fetch_add(1, std::memory_order_acq_rel);
}

void unwindPipeCheck()
{
    int* fds = g_unwindPipe.load(std::memory_order_acquire);
    const uint32_t gen = g_unwindPipeGen.load(std::memory_order_acquire);
    if (!fds || (gen & 1)) return;
    const OwnedFd ids[2] = {g_unwindPipeIds[0], g_unwindPipeIds[1]};
    if (g_unwindPipeGen.load(std::memory_order_acquire) != gen) return;
    if (fdStillOurs(ids[0]) && fdStillOurs(ids[1])) return;
    // The app took one of the numbers over: libunwind must neither read nor write it, nor close it
    // when its read fails (which is what it does before making a new pipe). -1 makes it make a new
    // one at its next validation (above the floor: that is under OwnPipesScope) without closing
    // anything; each number is replaced only if libunwind still holds the one checked.
    for (int i = 0; i < 2; ++i) {
        int expected = ids[i].fd;
        __atomic_compare_exchange_n(&fds[i], &expected, -1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    }
    OwnedFd a = ids[0], b = ids[1];
    fdRelease(a);  // our end, if the app took only the other
    fdRelease(b);
    g_unwindPipe.store(nullptr, std::memory_order_release);
}

OwnPipesScope::OwnPipesScope() { ++t_ownPipes; }
OwnPipesScope::~OwnPipesScope() { --t_ownPipes; }
bool inOwnPipesScope() { return t_ownPipes > 0; }

}  // namespace gpuspy::shim
