// collector/cli/process_watch.h: every process of record's tree, followed while it runs: what it ran, and
// whether it carried gpuspy (the shim preloaded, the collector's socket in its environment), so that
// record can name those that ran without gpuspy or wrote a capture of their own.
#pragma once

#include "collector/model/model.h"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuspy::collect::cli {

// One process image of the tree, as last seen.
struct WatchedProcess {
    pid_t pid = 0, ppid = 0;
    std::string command;     // its command line, arguments joined by spaces
    bool execd = false;      // seen as an image of its own (exec'd), not only as a fork of its parent
    bool preload = false;    // LD_PRELOAD names the shim
    bool socket = false;     // GPUSPY_SOCKET names this collector
    bool staticExe = false;  // no program interpreter: the loader preloads nothing into it
    // mapsRead: its mappings were read after the loader had mapped its libraries (libc in them, or a
    // static program), so that a CUDA driver linked at load would have shown.
    bool shimMapped = false, cudaMapped = false, mapsRead = false;
    std::chrono::steady_clock::time_point since;  // when this image was first seen
    std::string loadDir, tmpDir, output;  // its working directory at exec, $TMPDIR, $GPUSPY_OUTPUT
    bool alive = true;
    bool unseen = false;  // it exec'd (a process event said so) and ended before its image could be read
};

// Follows the descendants of this process (record): by the kernel's process events (exec, exit) where
// they can be had (the proc connector; root), and by reading /proc every 50 ms in any case. A process
// that lives for less than that and exec'd while no event could be read is not seen. Its mappings are
// read while it runs until the CUDA driver shows: every millisecond in its first 200 ms (a short-lived
// child), then every 10 ms (the "loaded the CUDA driver" the report gives is then certain; "not seen"
// is only what the reads saw).
class ProcessWatch {
public:
    ProcessWatch(std::string shim, std::string socket);
    ~ProcessWatch();
    ProcessWatch(const ProcessWatch&) = delete;
    ProcessWatch& operator=(const ProcessWatch&) = delete;

    // Every process image seen so far, by pid (an exec chain's last image).
    std::vector<WatchedProcess> seen() const;
    bool usesProcessEvents() const { return m_netlink >= 0; }

private:
    void run();
    void scan();
    void readEvents();
    void inspect(pid_t pid, bool execd);
    bool refreshMaps();  // true: a process is still young (read again in a millisecond)
    bool isDescendant(pid_t pid) const;

    std::string m_shim, m_socket;
    int m_netlink = -1;
    int m_wake[2] = {-1, -1};
    mutable std::mutex m_mutex;
    std::map<pid_t, WatchedProcess> m_seen;
    std::vector<pid_t> m_unseen;
    std::set<pid_t> m_tree;  // our descendants, as far as known (watch thread only)
    std::chrono::steady_clock::time_point m_nextOldRead{};  // the older processes' next read (watch thread only)
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

// What record says of the processes of its tree that are not in the capture: those that ran without
// the shim (no LD_PRELOAD, a static program) and those that wrote a capture of their own (no
// GPUSPY_SOCKET), with that file's path when it exists. `connected`: the pids in the capture.
std::vector<OutsideProcess> outsideProcesses(const std::vector<WatchedProcess>& seen, const std::vector<uint32_t>& connected);

}  // namespace gpuspy::collect::cli
