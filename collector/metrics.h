// collector/metrics.h: `gpuspy collect --metrics HOST:PORT`, the live figures (LiveStats) served as
// Prometheus text at /metrics by prometheus-cpp. Built only where prometheus-cpp is linked
// (GPUSPY_HAVE_METRICS): Debian has no static library of it, so the release tarball, whose binaries
// may need nothing beyond glibc and libstdc++, is built without it.
#pragma once

#include "collector/live_stats.h"

#include <memory>
#include <string>

namespace gpuspy::collect {

// Whether this gpuspy was built with the metrics endpoint.
bool metricsBuilt();

class MetricsServer {
public:
    // Listens on `hostPort` ("HOST:PORT", "PORT" or ":PORT": loopback). Throws std::runtime_error with
    // one line saying why it cannot (a port in use, a bad address, not built).
    explicit MetricsServer(const std::string& hostPort);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    const std::string& address() const { return m_address; }
    // Copies the figures of the last tick into the metrics (after LiveStats::tick).
    void update(const LiveStats& live, size_t connected);

private:
    struct Impl;
    std::unique_ptr<Impl> m;
    std::string m_address;
};

// "HOST:PORT" from what the user typed: a bare port, or ":PORT", is on 127.0.0.1. Throws
// std::runtime_error when there is no port.
std::string metricsAddress(const std::string& hostPort);

}  // namespace gpuspy::collect
