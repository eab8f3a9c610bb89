// collector/live/metrics.cpp: gpuspy's side of `collect --metrics`: loads libgpuspy_metrics.so and hands it
// each tick's figures as labelled series (collector/live/metrics_plugin.h); the plugin serves them.
#include "collector/live/metrics.h"

#include "collector/live/metrics_plugin.h"
#include "collector/live/server.h"

#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gpuspy::collect {

struct MetricsServer::Plugin {
    decltype(&gpuspy_metrics_abi_version) abiVersion;
    decltype(&gpuspy_metrics_open) open;
    decltype(&gpuspy_metrics_update) update;
    decltype(&gpuspy_metrics_close) close;
};

namespace {

// The plugin, loaded once per process and never unloaded: civetweb's threads and prometheus-cpp's
// statics must not outlive their code.
const MetricsServer::Plugin& loadPlugin(const std::string& path)
{
    static MetricsServer::Plugin plugin{};
    static std::string loadedFrom;
    if (!loadedFrom.empty()) return plugin;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error(std::string("--metrics: cannot load the metrics plugin: ") + dlerror());
    auto symbol = [&](const char* name) {
        void* p = dlsym(handle, name);
        if (!p) throw std::runtime_error("--metrics: " + path + " is not gpuspy's metrics plugin (no " + name + ")");
        return p;
    };
    MetricsServer::Plugin p{};
    p.abiVersion = reinterpret_cast<decltype(p.abiVersion)>(symbol("gpuspy_metrics_abi_version"));
    p.open = reinterpret_cast<decltype(p.open)>(symbol("gpuspy_metrics_open"));
    p.update = reinterpret_cast<decltype(p.update)>(symbol("gpuspy_metrics_update"));
    p.close = reinterpret_cast<decltype(p.close)>(symbol("gpuspy_metrics_close"));
    if (p.abiVersion() != GPUSPY_METRICS_ABI_VERSION)
        throw std::runtime_error("--metrics: " + path + " is another gpuspy version's metrics plugin (interface " +
                                 std::to_string(p.abiVersion()) + ", this gpuspy's is " +
                                 std::to_string(GPUSPY_METRICS_ABI_VERSION) + ")");
    plugin = p;
    loadedFrom = path;
    return plugin;
}

std::string commandLabel(const std::string& command)
{
    std::string first = command.substr(0, command.find(' '));
    const size_t slash = first.rfind('/');
    if (slash != std::string::npos) first = first.substr(slash + 1);
    if (first.size() > 64) first.resize(64);
    return first;
}

using LabelList = std::vector<std::pair<std::string, std::string>>;
struct Row {
    uint32_t family, process;
    LabelList labels;
    double value;
};

}  // namespace

std::string metricsAddress(const std::string& hostPort)
{
    const size_t colon = hostPort.rfind(':');
    std::string host = colon == std::string::npos ? "" : hostPort.substr(0, colon);
    const std::string port = colon == std::string::npos ? hostPort : hostPort.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
        throw std::runtime_error("--metrics " + hostPort + ": HOST:PORT with a port number, please");
    if (host.empty()) host = "127.0.0.1";
    return host + ":" + port;
}

MetricsServer::MetricsServer(const std::string& hostPort, const std::string& pluginPath)
    : m_address(metricsAddress(hostPort))
{
    m_plugin = &loadPlugin(pluginPath);
    char error[512] = "";
    m_server = m_plugin->open(m_address.c_str(), error, sizeof error);
    if (!m_server) throw std::runtime_error(error[0] ? error : "cannot serve metrics on " + m_address);
}

MetricsServer::~MetricsServer()
{
    if (m_server) m_plugin->close(m_server);
}

void MetricsServer::update(const LiveStats& live, size_t connectedNow)
{
    std::vector<Row> rows;
    rows.push_back({GPUSPY_METRIC_CONNECTED, GPUSPY_METRICS_COLLECTOR, {}, double(connectedNow)});
    rows.push_back({GPUSPY_METRIC_EVICTED, GPUSPY_METRICS_COLLECTOR, {}, double(live.evictedRecords())});
    for (const auto& [stream, p] : live.processes()) {
        const LabelList base{{"pid", std::to_string(p.pid)}, {"command", commandLabel(p.command)}};
        auto with = [&](LabelList more) {
            LabelList l = base;
            l.insert(l.end(), more.begin(), more.end());
            return l;
        };
        auto add = [&](uint32_t family, LabelList labels, double value) {
            rows.push_back({family, stream, std::move(labels), value});
        };
        for (const auto& d : p.devices) {
            add(GPUSPY_METRIC_LAUNCHES, with({{"device", std::to_string(d.id)}}), double(d.launchesTotal));
            add(GPUSPY_METRIC_BUSY, with({{"device", std::to_string(d.id)}}), d.busyRatio);
        }
        for (const auto& [k, t] : p.transfers) {
            const LabelList l = with({{"direction", t.direction}, {"host_memory", t.hostMemory}, {"mode", t.mode}});
            add(GPUSPY_METRIC_TRANSFER_BYTES, l, double(t.bytesTotal));
            add(GPUSPY_METRIC_TRANSFER_SECONDS, l, double(t.hostNsTotal) / 1e9);
            add(GPUSPY_METRIC_TRANSFERS, l, double(t.countTotal));
        }
        for (const auto& [kind, s] : p.syncs) {
            const LabelList l = with({{"sync_kind", kind}});
            add(GPUSPY_METRIC_SYNC_BLOCKED, l, double(s.blockedNsTotal) / 1e9);
            add(GPUSPY_METRIC_SYNCS, l, double(s.countTotal));
        }
        add(GPUSPY_METRIC_DROPPED, base, double(p.droppedRecords));
        add(GPUSPY_METRIC_OVERHEAD, base, double(p.overheadNs) / 1e9);
        for (const auto& [rule, f] : p.findings)
            add(GPUSPY_METRIC_FINDING, with({{"rule", rule}}), f.lastTick == live.ticks() ? 1 : 0);
    }
    // The C view of the rows: every pointer into `rows`, which stays put until the call returns.
    std::vector<gpuspy_metrics_label> labels;
    size_t total = 0;
    for (const Row& r : rows) total += r.labels.size();
    labels.reserve(total);
    std::vector<gpuspy_metrics_series> series;
    series.reserve(rows.size());
    for (const Row& r : rows) {
        const size_t first = labels.size();
        for (const auto& [name, value] : r.labels) labels.push_back({name.c_str(), value.c_str()});
        series.push_back({r.family, r.process, labels.data() + first, uint32_t(r.labels.size()), r.value});
    }
    char error[512] = "";
    if (!m_plugin->update(m_server, series.data(), series.size(), monotonicNs(), error, sizeof error) && !m_failed) {
        m_failed = true;  // once: the collector goes on recording either way
        std::fprintf(stderr, "gpuspy collect: %s\n", error);
    }
}

}  // namespace gpuspy::collect
