// collector/attach/inject.h: making one thread of a running process call into it (gpuspy attach):
// the checks that say whether we may, and the ptrace injection itself. x86-64 Linux only.
#pragma once

#include <sys/types.h>

#include <string>

namespace gpuspy::collect::attach {

// Why this process may not be traced by us, as one line that says what to do instead; empty when it
// may. Checks the process exists, the architecture, Yama's ptrace_scope, its user and dumpable flag.
std::string whyNotTraceable(pid_t pid);

// What a call into the target gave back.
struct CallResult {
    bool ok = false;      // the call ran and the thread was restored: rc is its return value
    long rc = 0;
    std::string error;    // why not (nothing was changed in the target), one line
    int tid = 0;          // the thread borrowed
    double stoppedMs = 0; // how long that thread was held
};

// Borrows one thread of `pid` that waits in a restartable system call (sleep, poll, select, a
// condition variable; never epoll_wait), interrupts it once, and makes it call
// dlopen(library, flags), then `entry`(argument) from that library, then restores every register,
// the FPU/vector state, the signal mask and errno exactly as they were (the wait resumes).
// Any doubt before the first call aborts with nothing changed.
CallResult callEntry(pid_t pid, const std::string& library, int dlopenFlags, const char* entry,
                     const std::string& argument);

}  // namespace gpuspy::collect::attach
