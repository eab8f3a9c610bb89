// shim/fds.cpp: the shim's own descriptors, kept out of the app's way: moved above a high floor (the
// app's open/socket/accept take the lowest free numbers, and servers dup2 onto low ones), and known by
// what they refer to (device and inode), so that a number the app took over (dup2 onto it, closefrom
// then a new open) is noticed before gpuspy writes, and never written to or closed.
// Also libunwind's memory-validation pipe: libunwind 1.6 makes it with pipe2 at its first unwind and
// keeps the numbers for the life of the process; pipe2, interposed (preload.cpp), moves it high when
// libunwind runs on gpuspy's behalf (OwnPipesScope).
// Spares made at load (fdsReserveAtLoad): the collector's socket, libunwind's pipe, and the capture file
// (unnamed until it is used) are made when the library loads, and handed out when they are first
// needed. An app that lowers RLIMIT_NOFILE before its first CUDA call would otherwise lose numbers under
// its new limit to them (a new descriptor takes the lowest free number, and none above the limit can be
// had). They go at or above the limit the process started with where its hard limit allows (the soft
// limit is raised for the moment it takes to place them), else at its very top: no limit the app sets
// later, up to the one it started with, has room for one of its descriptors taken by them.
#include "shim/shim.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>

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

// The spares: each handed out once, to its first user; a number the app took over meanwhile never is.
OwnedFd g_spareSocket;
OwnedFd g_sparePipe[2];
std::atomic<bool> g_sparesTaken[3];  // socket, pipe, file: handed out (or given up) once

OwnedFd g_spareFile;       // an unnamed file (O_TMPFILE) in the capture's directory
int g_spareFilePid = 0;
int g_spareSocketPid = 0;  // the process whose spare g_spareSocket is (a socket is one connection)

// Where the spares go: numbers from `base` up, where base + kSpareRoom is within the soft limit while
// they are placed. A limit at load above kSpareTop keeps them at kSpareTop's top (the kernel's table of
// descriptors grows to the highest number held: 512 KiB there).
constexpr int kSpareRoom = 8;  // four are made; a few more for numbers already taken up there
constexpr rlim_t kSpareTop = 65536;

struct SparePlace {
    int base = -1;       // -1: the usual floor (fdMoveHigh)
    bool raised = false;  // the soft limit was raised to place them; `load` is put back after
    rlimit load{};
};

SparePlace sparePlaceAtLoad()
{
    SparePlace p;
    if (getrlimit(RLIMIT_NOFILE, &p.load) != 0) return p;
    const rlim_t cur = p.load.rlim_cur;
    if (cur == RLIM_INFINITY || cur < rlim_t(2 * kSpareRoom)) return p;
    if (cur < kSpareTop && (p.load.rlim_max == RLIM_INFINITY || p.load.rlim_max >= cur + kSpareRoom)) {
        rlimit up = p.load;
        up.rlim_cur = cur + kSpareRoom;
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            p.raised = true;
            p.base = int(cur);
            return p;
        }
    }
    p.base = int((cur < kSpareTop ? cur : kSpareTop) - kSpareRoom);
    return p;
}

// A spare moved to the place (fd then closed), its identity taken; the usual floor where there is no room.
OwnedFd spareOwn(int fd, const SparePlace& p)
{
    if (fd < 0 || p.base < 0 || fd >= p.base) return fdOwn(fd);
    OwnedFd o;
    struct stat st{};
    if (fstat(fd, &st) != 0) return fdOwn(fd);
    const int high = fcntl(fd, F_DUPFD_CLOEXEC, p.base);
    if (high < 0) return fdOwn(fd);
    close(fd);  // at load: nothing of the app's can have taken it
    o.fd = high;
    o.dev = uint64_t(st.st_dev);
    o.ino = uint64_t(st.st_ino);
    return o;
}

// The spare socket across fork. A socket is one connection: a worker that inherits its parent's unused
// spare shares it with the parent and with every sibling forked after it, and the first to connect it
// leaves the others "already connected" (their records went to capture files of their own). So every
// fork gives the child a spare of its own, made in the parent just before the fork where its limit
// still allows the place (a pre-fork master that never calls CUDA, whose workers lower their limit
// before their first call), else the parent's unused spare itself (the parent makes its own later, if
// it ever records). These handlers are registered at load: such a master makes no CUDA call, and
// gpuspy's own fork handlers (runtime.cpp) go in at the first one.
// The spare capture file likewise: a worker's capture is a file of its own (named with its pid where
// the parent's name is taken), and without a spare it would be opened at the worker's first call,
// under the limit it may have lowered. The spare pipe serves parent and children alike (libunwind's own
// pipe is shared with a forked child the same way).
int g_childBase = -1;        // where a child's spares go: below the limit at load, above any set later
char g_spareDir[4096];       // where the spare files are made ("": none)
OwnedFd g_childSocket;       // made in prefork, for the child
OwnedFd g_childFile;
bool g_handOver = false;     // this fork gives the child the parent's unused spare socket
bool g_handOverFile = false;
pthread_mutex_t g_forkLock = PTHREAD_MUTEX_INITIALIZER;  // concurrent forks: one child, one spare

// A new descriptor at g_childBase and up where the limit now allows it (identity taken); none otherwise.
OwnedFd childSpare(int fd)
{
    OwnedFd o;
    rlimit rl{};
    struct stat st{};
    if (fd >= 0 && g_childBase >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        (rl.rlim_cur == RLIM_INFINITY || rlim_t(g_childBase) + kSpareRoom <= rl.rlim_cur) && fstat(fd, &st) == 0) {
        const int high = fcntl(fd, F_DUPFD_CLOEXEC, g_childBase);
        if (high >= 0) {
            o.fd = high;
            o.dev = uint64_t(st.st_dev);
            o.ino = uint64_t(st.st_ino);
        }
    }
    if (fd >= 0) close(fd);
    return o;
}

void sparesPrefork()
{
    pthread_mutex_lock(&g_forkLock);
    const int savedErrno = errno;
    const int self = int(getpid());
    g_childSocket = g_childFile = OwnedFd{};
    g_handOver = g_handOverFile = false;
    if (g_spareSocketPid != 0) {
        g_childSocket = childSpare(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (g_childSocket.fd < 0)
            g_handOver = !g_sparesTaken[0].load() && g_spareSocketPid == self && fdStillOurs(g_spareSocket);
    }
    if (g_spareDir[0]) {
        g_childFile = childSpare(open(g_spareDir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
        if (g_childFile.fd < 0)
            g_handOverFile = !g_sparesTaken[2].load() && g_spareFilePid == self && fdStillOurs(g_spareFile);
    }
    errno = savedErrno;
}

void sparesPostforkParent()
{
    // The child's spares, or those handed over, are the child's alone now: our copies go.
    fdRelease(g_childSocket);
    fdRelease(g_childFile);
    if (g_handOver && !g_sparesTaken[0].exchange(true)) fdRelease(g_spareSocket);
    if (g_handOverFile && !g_sparesTaken[2].exchange(true)) fdRelease(g_spareFile);
    g_handOver = g_handOverFile = false;
    pthread_mutex_unlock(&g_forkLock);
}

// `spare` (taken-flag `taken`, owner `pid`) becomes the child's own `made`, or the handed-over one, or none.
void childTakes(OwnedFd& spare, std::atomic<bool>& taken, int& pid, OwnedFd& made, bool handedOver)
{
    if (made.fd >= 0) {
        if (!taken.load()) fdRelease(spare);  // the parent's unused one: our copy goes
        spare = made;
        made = OwnedFd{};
        taken.store(false);
        pid = int(getpid());
    } else if (handedOver) {
        pid = int(getpid());
    } else {
        if (!taken.exchange(true)) fdRelease(spare);  // the parent's, not ours to use
        spare = OwnedFd{};
    }
}

void sparesPostforkChild()
{
    pthread_mutex_unlock(&g_forkLock);  // held by this thread since prefork (a normal mutex: no owner check)
    if (g_spareSocketPid != 0) childTakes(g_spareSocket, g_sparesTaken[0], g_spareSocketPid, g_childSocket, g_handOver);
    if (g_spareDir[0]) childTakes(g_spareFile, g_sparesTaken[2], g_spareFilePid, g_childFile, g_handOverFile);
    g_handOver = g_handOverFile = false;
}

void fdsReserveAtLoad(bool socket, bool pipe, const char* fileDir)
{
    const int savedErrno = errno;
    const SparePlace place = sparePlaceAtLoad();
    if (place.base >= 0) g_childBase = place.raised ? place.base - kSpareRoom : place.base;
    if (socket) {
        g_spareSocket = spareOwn(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), place);
        g_spareSocketPid = int(getpid());
    }
    // Nothing appears in the directory until the file is given its name (fdTakeSpareFile); a process
    // that never records leaves nothing behind. Filesystems without O_TMPFILE: none is made.
    if (fileDir && *fileDir) {
        g_spareFile = spareOwn(open(fileDir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600), place);
        g_spareFilePid = int(getpid());
        if (g_spareFile.fd >= 0 && strlen(fileDir) < sizeof g_spareDir) strcpy(g_spareDir, fileDir);
    }
    if (g_spareSocketPid != 0 || g_spareDir[0]) pthread_atfork(sparesPrefork, sparesPostforkParent, sparesPostforkChild);
    int fds[2] = {-1, -1};
    if (pipe && pipe2(fds, O_CLOEXEC) == 0) {
        // Placed here, not by the interposed pipe2's move: these are no libunwind's yet.
        g_sparePipe[0] = spareOwn(fds[0], place);
        g_sparePipe[1] = spareOwn(fds[1], place);
    }
    if (place.raised) setrlimit(RLIMIT_NOFILE, &place.load);
    errno = savedErrno;
}

// Spares are taken between forks (g_forkLock): a fork from another thread at that moment would leave the
// child a copy of the spare just taken, as its own. A fork takes a moment; should the lock stay held
// (this thread is an exit's, in a handler that interrupted a fork), no spare is taken.
struct BetweenForks {
    bool held = false;
    BetweenForks()
    {
        for (int i = 0; i < 500 && !held; ++i) {
            held = pthread_mutex_trylock(&g_forkLock) == 0;
            if (!held) {
                timespec ts{0, 100000};
                nanosleep(&ts, nullptr);
            }
        }
    }
    ~BetweenForks()
    {
        if (held) pthread_mutex_unlock(&g_forkLock);
    }
};

int fdTakeSpareSocket()
{
    BetweenForks between;
    if (!between.held) return -1;
    // Not in a child made without fork's handlers (clone, vfork): the spare is its parent's.
    if (g_spareSocketPid != int(getpid()) || g_sparesTaken[0].exchange(true)) return -1;
    OwnedFd o = g_spareSocket;
    g_spareSocket = OwnedFd{};
    return fdStillOurs(o) ? o.fd : -1;
}

bool fdTakeSparePipe(int fds[2], int flags)
{
    if (g_sparesTaken[1].exchange(true)) return false;
    OwnedFd a = g_sparePipe[0], b = g_sparePipe[1];
    g_sparePipe[0] = g_sparePipe[1] = OwnedFd{};
    if (!fdStillOurs(a) || !fdStillOurs(b)) {
        fdRelease(a);
        fdRelease(b);
        return false;
    }
    // The flags pipe2 was asked for: O_NONBLOCK belongs to the pipe, close-on-exec to each number.
    OwnedFd* const pair[2] = {&a, &b};
    for (OwnedFd* o : pair) {
        const int fl = fcntl(o->fd, F_GETFL);
        if (fl >= 0) fcntl(o->fd, F_SETFL, (flags & O_NONBLOCK) ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
        fcntl(o->fd, F_SETFD, (flags & O_CLOEXEC) ? FD_CLOEXEC : 0);
    }
    fds[0] = a.fd;
    fds[1] = b.fd;
    return true;
}

static int takeSpareFileLocked(const char* path)
{
    if (g_spareFilePid != int(getpid()) || g_sparesTaken[2].exchange(true)) return -1;
    OwnedFd o = g_spareFile;
    g_spareFile = OwnedFd{};
    if (!fdStillOurs(o)) return -1;
    // Named as open(O_CREAT | O_EXCL) would make it: linkat fails on any existing name. The spare is
    // kept for the caller's next name then (a forked worker's capture: the parent's name with its pid).
    const int savedErrno = errno;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", o.fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) {
        const int err = errno;
        if (err == EEXIST) {
            g_spareFile = o;
            g_sparesTaken[2].store(false);
        } else {
            fdRelease(o);
        }
        errno = savedErrno;
        return -1;
    }
    errno = savedErrno;
    return o.fd;
}

int fdTakeSpareFile(const char* path)
{
    BetweenForks between;
    return between.held ? takeSpareFileLocked(path) : -1;
}

OwnPipesScope::OwnPipesScope() { ++t_ownPipes; }
OwnPipesScope::~OwnPipesScope() { --t_ownPipes; }
bool inOwnPipesScope() { return t_ownPipes > 0; }

}  // namespace gpuspy::shim
