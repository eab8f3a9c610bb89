// collector/live/metrics.h: `gpuspy collect --metrics HOST:PORT`, the live figures (LiveStats) served as
// Prometheus text at /metrics by the plugin libgpuspy_metrics.so (prometheus-cpp, behind the C seam of
// collector/live/metrics_plugin.h), which gpuspy loads only here: Debian has no static prometheus-cpp, and
// bin/gpuspy itself may need nothing beyond glibc and libstdc++ (the release tarball ships the plugin
// and its libraries in lib/gpuspy/).
#pragma once

#include "collector/live/live_stats.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

struct gpuspy_metrics;

namespace gpuspy::collect {

class MetricsServer {
public:
    // Loads the plugin at `pluginPath` and listens on `hostPort` ("HOST:PORT", "PORT" or ":PORT":
    // loopback). Throws std::runtime_error with one line saying why it cannot (the plugin does not
    // load, a port in use, a bad address).
    // `kernelSeries`: per-kernel series for that many kernels of each process (the rest as
    // kernel="other"); 0, the default: none.
    MetricsServer(const std::string& hostPort, const std::string& pluginPath, size_t kernelSeries = 0);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    const std::string& address() const { return m_address; }
    // Copies the figures of the last tick into the metrics (after LiveStats::tick).
    void update(const LiveStats& live, size_t connected);

    struct Plugin;  // the plugin's entry points

private:
    std::vector<std::pair<std::string, std::string>> deviceLabels(const LiveProcess::Device& d) const;
    // The per-kernel rows of a process: its named kernels, then "other" (the rest summed).
    std::vector<std::pair<std::string, LiveProcess::Kernel>> kernelRows(uint32_t stream, const LiveProcess& p);

    const Plugin* m_plugin = nullptr;
    gpuspy_metrics* m_server = nullptr;
    std::string m_address;
    bool m_failed = false;  // an update failed (said once)
    size_t m_kernelSeries = 0;
    // Per process (stream), the kernels that have series of their own: the first kernelSeries to be
    // seen, by GPU time within their tick, kept for the process's life, so that "other" only grows (a
    // kernel moving out of it would read as a counter reset).
    std::map<uint32_t, std::set<std::string>> m_namedKernels;
    std::string m_hostname;
    std::map<std::string, int> m_nvmlIndex;  // PCI bus id (lower case) -> the NVIDIA driver's index
};

// "HOST:PORT" from what the user typed: a bare port, or ":PORT", is on 127.0.0.1. Throws
// std::runtime_error when there is no port.
std::string metricsAddress(const std::string& hostPort);

}  // namespace gpuspy::collect
