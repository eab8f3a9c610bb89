// shim/preload.cpp: the exported glue only the shared library has: our dlsym, which every
// lookup goes through (static cudart calls the executable's dlsym import, which this interposes),
// the exits atexit never sees: _exit/_Exit and exec (the capture so far is complete before the
// process image goes; a failed exec goes on recording in a new stream), sigaction/signal, so
// that a handler the app installs late goes behind ours instead of replacing it (lifecycle.cpp), and
// pipe/pipe2, so that libunwind's pipe lands out of the app's way (fds.cpp).
#include "shim/shim.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>

namespace {

// The libc functions this file interposes, as ours: what dlsym(RTLD_NEXT) must find in libgpuspy.
void* ownDefinition(const char* name);

// dlsym(RTLD_NEXT, name) means "the next definition after the caller's object". Forwarded from here
// the real dlsym would search after libgpuspy instead, and an interposer preloaded after us would
// find itself (endless recursion). So walk the link map from the caller's object on. A caller loaded
// before us (a sanitizer runtime preloaded first, which looks up its real functions while it starts,
// before any initializer ran) gets the forwarded answer unless we define the name: the walk would
// dlopen objects whose initializers have not run yet.
GS_UNINSTRUMENTED void* nextAfter(void* caller, const char* name, gpuspy::shim::DlsymFn real)
{
    Dl_info info;
    link_map* self = nullptr;
    link_map* ours = nullptr;
    if (!dladdr1(caller, &info, reinterpret_cast<void**>(&self), RTLD_DL_LINKMAP) || !self) return real(RTLD_DEFAULT, name);
    if (!dladdr1(reinterpret_cast<void*>(&nextAfter), &info, reinterpret_cast<void**>(&ours), RTLD_DL_LINKMAP)) ours = nullptr;
    for (link_map* m = self; ours && m; m = m->l_next) {
        if (m != ours) continue;
        void* own = self == ours ? nullptr : ownDefinition(name);
        return own ? own : real(RTLD_NEXT, name);
    }
    for (link_map* m = self->l_next; m; m = m->l_next) {
        void* h = dlopen(m->l_name && m->l_name[0] ? m->l_name : nullptr, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        void* p = real(h, name);
        dlclose(h);
        if (!p) continue;
        link_map* owner = nullptr;
        if (dladdr1(p, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) && owner == m) return p;
    }
    return nullptr;
}

}  // namespace

namespace gpuspy::shim {
namespace {

constexpr uint64_t kExitFlushNs = 1000000000ull;

// Before the process image is replaced: the capture so far must be complete. If the exec fails,
// the app goes on and so does recording, in a new stream.
template <class F, class... Args>
int execThrough(const char* name, Args... args)
{
    DlsymFn dl = realDlsym();
    auto real = dl ? reinterpret_cast<F>(dl(RTLD_NEXT, name)) : nullptr;
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    const bool stopped = stopRecording(kExitFlushNs, true, 0, StopFor::Exec);
    const int rc = real(args...);
    const int savedErrno = errno;
    if (stopped) resumeRecording();
    errno = savedErrno;
    return rc;
}

}  // namespace
}  // namespace gpuspy::shim

namespace {

// execl* take their arguments as a list: gather them (on the stack) and use the execv* form.
size_t countArgs(const char* arg0, va_list ap)
{
    size_t n = arg0 ? 1 : 0;
    if (arg0)
        while (va_arg(ap, const char*)) ++n;
    return n;
}

// Fills argv[0..n] (null-terminated) from the list; leaves *ap after the list's terminating null.
void fillArgs(const char** argv, size_t n, const char* arg0, va_list* ap)
{
    for (size_t i = 0; i < n; ++i) argv[i] = i == 0 ? arg0 : va_arg(*ap, const char*);
    if (n > 0) (void)va_arg(*ap, const char*);  // the terminating null (when arg0 was not it)
    argv[n] = nullptr;
}

// Declares `const char* argv[]` in the caller's frame (a VLA cannot be returned), filled from the
// list after arg0; ap is left open after the terminating null (execle reads envp from there).
#define GS_ARGV_FROM_LIST(argv, arg0, ap)                  \
    va_start(ap, arg0);                                    \
    const size_t argv##Count = countArgs(arg0, ap);        \
    va_end(ap);                                            \
    const char* argv[argv##Count + 1];                     \
    va_start(ap, arg0);                                    \
    fillArgs(argv, argv##Count, arg0, &ap)

}  // namespace

extern "C" __attribute__((visibility("default"))) GS_UNINSTRUMENTED void* dlsym(void* handle, const char* name)
{
    gpuspy::shim::DlsymFn real = gpuspy::shim::realDlsym();
    if (!real) return nullptr;
    const int saved = errno;
    void* p = handle == RTLD_NEXT ? nextAfter(__builtin_return_address(0), name, real) : real(handle, name);
    // Only cu* names are ours to answer; the others never reach instrumented code (a sanitizer
    // runtime starting up asks for mmap, pthread_create, ... before it can run any).
    void* out = name[0] == 'c' && name[1] == 'u' ? gpuspy::shim::interceptDlsym(handle, name, p) : p;
    errno = saved;
    return out;
}


// _exit skips atexit, so it is where a program that leaves that way (a worker, a forked child that
// used CUDA) is last seen. exit() itself calls the kernel directly, not this.
extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status)
{
    gpuspy::shim::stopRecording(gpuspy::shim::kExitFlushNs, true, 0, gpuspy::shim::StopFor::Ending);
    for (;;) syscall(SYS_exit_group, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
    gpuspy::shim::stopRecording(gpuspy::shim::kExitFlushNs, true, 0, gpuspy::shim::StopFor::Ending);
    for (;;) syscall(SYS_exit_group, status);
}

extern "C" __attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[])
{
    return gpuspy::shim::execThrough<int (*)(const char*, char* const*, char* const*)>("execve", path, argv, envp);
}

extern "C" __attribute__((visibility("default"))) int execv(const char* path, char* const argv[])
{
    return gpuspy::shim::execThrough<int (*)(const char*, char* const*)>("execv", path, argv);
}

extern "C" __attribute__((visibility("default"))) int execvp(const char* file, char* const argv[])
{
    return gpuspy::shim::execThrough<int (*)(const char*, char* const*)>("execvp", file, argv);
}

extern "C" __attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[])
{
    return gpuspy::shim::execThrough<int (*)(const char*, char* const*, char* const*)>("execvpe", file, argv, envp);
}

extern "C" __attribute__((visibility("default"))) int execl(const char* path, const char* arg0, ...)
{
    va_list ap;
    GS_ARGV_FROM_LIST(argv, arg0, ap);
    va_end(ap);
    return execv(path, const_cast<char* const*>(argv));
}

extern "C" __attribute__((visibility("default"))) int execlp(const char* file, const char* arg0, ...)
{
    va_list ap;
    GS_ARGV_FROM_LIST(argv, arg0, ap);
    va_end(ap);
    return execvp(file, const_cast<char* const*>(argv));
}

extern "C" __attribute__((visibility("default"))) int execle(const char* path, const char* arg0, ...)
{
    va_list ap;
    GS_ARGV_FROM_LIST(argv, arg0, ap);
    char* const* envp = va_arg(ap, char* const*);
    va_end(ap);
    return execve(path, const_cast<char* const*>(argv), envp);
}

extern "C" __attribute__((visibility("default"))) GS_UNINSTRUMENTED int sigaction(int sig, const struct sigaction* act,
                                                                struct sigaction* old)
{
    return gpuspy::shim::appSigaction(sig, act, old);
}

// glibc's signal(): BSD semantics (the signal blocked in its handler, system calls restarted), as
// an action the app installs through sigaction.
extern "C" __attribute__((visibility("default"))) GS_UNINSTRUMENTED sighandler_t signal(int sig, sighandler_t handler)
{
    if (handler == SIG_ERR || sig < 1 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction act{};
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
    struct sigaction old{};
    if (gpuspy::shim::appSigaction(sig, &act, &old) != 0) return SIG_ERR;
    return old.sa_handler;  // shares its storage with sa_sigaction, as glibc's signal() returns it
}

// pipe2 and pipe: the app's calls pass through untouched; libunwind's, made while gpuspy unwinds on
// this thread (OwnPipesScope: its memory-validation pipe, kept for the life of the process), get
// numbers above the shim's floor, out of the app's way (fds.cpp).
namespace {
template <class F>
F nextDefinition(const char* name)
{
    gpuspy::shim::DlsymFn dl = gpuspy::shim::realDlsym();
    return dl ? reinterpret_cast<F>(dl(RTLD_NEXT, name)) : nullptr;
}

int movePair(int* fds)
{
    fds[0] = gpuspy::shim::fdMoveHigh(fds[0]);
    fds[1] = gpuspy::shim::fdMoveHigh(fds[1]);
    gpuspy::shim::noteUnwindPipe(fds);
    return 0;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
    static auto real = nextDefinition<int (*)(int*, int)>("pipe2");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    const bool ours = gpuspy::shim::inOwnPipesScope();
    if (ours && gpuspy::shim::fdTakeSparePipe(fds, flags)) {  // made at load, above the floor (fds.cpp)
        gpuspy::shim::noteUnwindPipe(fds);
        return 0;
    }
    const int rc = real(fds, flags);
    if (rc != 0 || !ours) return rc;
    return movePair(fds);  // F_DUPFD_CLOEXEC; O_NONBLOCK belongs to the pipe, shared by the copies
}

extern "C" __attribute__((visibility("default"))) int pipe(int fds[2])
{
    static auto real = nextDefinition<int (*)(int*)>("pipe");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    const bool ours = gpuspy::shim::inOwnPipesScope();
    if (ours && gpuspy::shim::fdTakeSparePipe(fds, 0)) {
        gpuspy::shim::noteUnwindPipe(fds);
        return 0;
    }
    const int rc = real(fds);
    if (rc != 0 || !ours) return rc;
    return movePair(fds);
}

// Our definitions by hidden aliases: their addresses taken by name would be resolved through the
// GOT to the first definition in the process, which is a sanitizer runtime's interceptor.
// (The aliases lack libc's nonnull/nothrow attributes, which only matter to callers we have none of.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#define GS_OWN(name) extern "C" __attribute__((visibility("hidden"), alias(#name))) decltype(::name) gs_own_##name;
GS_OWN(dlsym)
GS_OWN(sigaction)
GS_OWN(signal)
GS_OWN(_exit)
GS_OWN(_Exit)
GS_OWN(execve)
GS_OWN(execv)
GS_OWN(execvp)
GS_OWN(execvpe)
GS_OWN(execl)
GS_OWN(execlp)
GS_OWN(execle)
GS_OWN(pipe)
GS_OWN(pipe2)
#undef GS_OWN
#pragma GCC diagnostic pop

namespace {

GS_UNINSTRUMENTED void* ownDefinition(const char* name)
{
    struct Own {
        const char* name;
        void* fn;
    };
    static const Own kOwn[] = {
#define GS_OWN(name) {#name, reinterpret_cast<void*>(&gs_own_##name)}
        GS_OWN(dlsym), GS_OWN(sigaction), GS_OWN(signal), GS_OWN(_exit),  GS_OWN(_Exit),  GS_OWN(execve),
        GS_OWN(execv), GS_OWN(execvp),    GS_OWN(execvpe), GS_OWN(execl), GS_OWN(execlp), GS_OWN(execle),
        GS_OWN(pipe),  GS_OWN(pipe2),
#undef GS_OWN
    };
    for (const Own& o : kOwn) {
        // By hand: strcmp is a sanitizer runtime's interceptor, unusable while it starts.
        size_t i = 0;
        while (o.name[i] && o.name[i] == name[i]) ++i;
        if (o.name[i] == name[i]) return o.fn;
    }
    return nullptr;
}

}  // namespace
