// collector/live/metrics.h: `gpuspy collect --metrics HOST:PORT`, the live figures (LiveStats) served as
// Prometheus text at /metrics by the plugin libgpuspy_metrics.so (prometheus-cpp, behind the C seam of
// collector/live/metrics_plugin.h), which gpuspy loads only here: Debian has no static prometheus-cpp, and
// bin/gpuspy itself may need nothing beyond glibc and libstdc++ (the release tarball ships the plugin
// and its libraries in lib/gpuspy/).
#pragma once

#include "collector/live/live_stats.h"

#include <string>

struct gpuspy_metrics;

namespace gpuspy::collect {

class MetricsServer {
public:
    // Loads the plugin at `pluginPath` and listens on `hostPort` ("HOST:PORT", "PORT" or ":PORT":
    // loopback). Throws std::runtime_error with one line saying why it cannot (the plugin does not
    // load, a port in use, a bad address).
    MetricsServer(const std::string& hostPort, const std::string& pluginPath);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    const std::string& address() const { return m_address; }
    // Copies the figures of the last tick into the metrics (after LiveStats::tick).
    void update(const LiveStats& live, size_t connected);

    struct Plugin;  // the plugin's entry points

private:
    const Plugin* m_plugin = nullptr;
    gpuspy_metrics* m_server = nullptr;
    std::string m_address;
    bool m_failed = false;  // an update failed (said once)
};

// "HOST:PORT" from what the user typed: a bare port, or ":PORT", is on 127.0.0.1. Throws
// std::runtime_error when there is no port.
std::string metricsAddress(const std::string& hostPort);

}  // namespace gpuspy::collect
