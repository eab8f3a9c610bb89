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
            close(fd);
            errno = savedErrno;
            return high;
        }
    }
    errno = savedErrno;
    return fd;  // no room above it: stays where it is, still checked by identity
}

OwnedFd fdOwn(int fd)
{
    OwnedFd o;
    o.fd = fdMoveHigh(fd);
    struct stat st{};
    if (o.fd >= 0 && fstat(o.fd, &st) == 0) {
        o.dev = uint64_t(st.st_dev);
        o.ino = uint64_t(st.st_ino);
    }
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

OwnPipesScope::OwnPipesScope() { ++t_ownPipes; }
OwnPipesScope::~OwnPipesScope() { --t_ownPipes; }
bool inOwnPipesScope() { return t_ownPipes > 0; }

}  // namespace gpuspy::shim
