// collector/metrics_absent.cpp: the metrics endpoint where this gpuspy was built without prometheus-cpp.
#include "collector/metrics.h"

#include <stdexcept>

namespace gpuspy::collect {

bool metricsBuilt()
{
    return false;
}

struct MetricsServer::Impl {};

std::string metricsAddress(const std::string& hostPort)
{
    return hostPort;
}

MetricsServer::MetricsServer(const std::string& hostPort)
{
    throw std::runtime_error("--metrics " + hostPort +
                             ": this gpuspy was built without prometheus-cpp (the release tarball is); build it "
                             "from source with Debian's prometheus-cpp-dev installed");
}

MetricsServer::~MetricsServer() = default;

void MetricsServer::update(const LiveStats&, size_t) {}

}  // namespace gpuspy::collect
