// collector/cli/process_tree.h: what `record` learns of the processes it started from /proc and from
// the command's file: which descendants carry the shim or its settings (record is their child
// subreaper), and why none could have (a static or setuid program).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpuspy::collect::cli {

// A process of ours that has the shim mapped, or gpuspy's settings for this collector in its
// environment (a static supervisor, a process in the middle of an exec chain): it, or a process it
// starts, may still make its first CUDA call (a daemon that double-forked, a worker started late).
struct Descendant {
    pid_t pid;
    std::string comm;
    bool loaded = true;  // the shim is mapped (else: only the settings)
};

// The whole of a (small) file, read through a descriptor that does not outlive an exec: `record` reads
// /proc while it starts the command, and a descriptor open in another thread at its fork would be the
// app's (std::ifstream opens without O_CLOEXEC: the app found /proc/N/stat among its descriptors, one
// fewer under a low limit). Empty when it cannot be read.
std::string readFileNoInherit(const std::string& path);

// Whether process `pid` has the file `shim` (an absolute, resolved path) mapped.
bool hasShimMapped(pid_t pid, const std::string& shim);
// Whether process `pid`'s environment points gpuspy at `socket` (GPUSPY_SOCKET=socket).
bool hasSettingsFor(pid_t pid, const std::string& socket);
// Our live descendants, by pid (`loaded` unset).
std::vector<Descendant> descendantsOf();
// Our live descendants that carry the shim or the settings for `socket`, by pid.
std::vector<Descendant> descendantsCarryingShim(const std::string& shim, const std::string& socket);
// "pid 12 (comm), pid 14 (comm, gpuspy's settings only)" (the first 8, then how many more).
std::string describe(const std::vector<Descendant>& descendants);
// Why the loader cannot preload the shim into `command` (found as execvp finds it): a static program,
// or a setuid/setgid one for a user other than root. Empty when neither holds or it cannot tell.
std::string unpreloadable(const std::string& command);

}  // namespace gpuspy::collect::cli
