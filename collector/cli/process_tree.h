// collector/cli/process_tree.h: what `record` learns of the processes it started from /proc and from
// the command's file: which descendants carry the shim (record is their child subreaper), and why
// none could have (a static or setuid program).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpuspy::collect::cli {

// A process of ours that has the shim mapped: it may still make its first CUDA call (a daemon that
// double-forked, a worker started late).
struct Descendant {
    pid_t pid;
    std::string comm;
};

// Whether process `pid` has the file `shim` (an absolute, resolved path) mapped.
bool hasShimMapped(pid_t pid, const std::string& shim);
// Our live descendants that carry the shim, by pid.
std::vector<Descendant> descendantsCarryingShim(const std::string& shim);
// "pid 12 (comm), pid 14 (comm)" (the first 8, then how many more).
std::string describe(const std::vector<Descendant>& descendants);
// Why the loader cannot preload the shim into `command` (found as execvp finds it): a static program,
// or a setuid/setgid one for a user other than root. Empty when neither holds or it cannot tell.
std::string unpreloadable(const std::string& command);

}  // namespace gpuspy::collect::cli
