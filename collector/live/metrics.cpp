// collector/live/metrics.cpp: gpuspy's side of `collect --metrics`: loads libgpuspy_metrics.so and hands it
// each tick's figures as labelled series (collector/live/metrics_plugin.h); the plugin serves them.
#include "collector/live/metrics.h"

#include "collector/live/metrics_plugin.h"
#include "collector/live/server.h"
#include "collector/report/text_parts.h"

#include <fmt/format.h>

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
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

// A PCI bus id as "DDDDDDDD:BB:DD.F" (upper case, the domain in 8 digits: DCGM exporter's pci_bus_id);
// empty when it does not parse. Drivers give "0000:41:00.0" or "00000000:41:00.0", /proc/driver/nvidia
// "0000:41:00.0" in lower case: all compare equal once canonical.
std::string canonicalBusId(const std::string& id)
{
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    if (std::sscanf(id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return {};
    return fmt::format("{:08X}:{:02X}:{:02X}.{:X}", domain, bus, device, function);
}

// DCGM exporter's `gpu` label is NVML's index, which orders the machine's GPUs by PCI bus id; the NVIDIA
// driver lists them by bus id in /proc/driver/nvidia/gpus. (CUDA's ordinal differs where
// CUDA_VISIBLE_DEVICES hides some, or by its default order, fastest first.)
std::map<std::string, int> nvidiaIndexes()
{
    std::vector<std::string> ids;
    if (DIR* dir = opendir("/proc/driver/nvidia/gpus")) {
        while (const dirent* e = readdir(dir)) {
            const std::string id = canonicalBusId(e->d_name);
            if (!id.empty()) ids.push_back(id);
        }
        closedir(dir);
    }
    std::sort(ids.begin(), ids.end());
    std::map<std::string, int> index;
    for (size_t i = 0; i < ids.size(); ++i) index[ids[i]] = int(i);
    return index;
}

std::string hostName()
{
    char name[256] = "";
    if (gethostname(name, sizeof name - 1) != 0) return {};
    return name;
}

constexpr size_t kKernelLabelMax = 128;

using LabelList = std::vector<std::pair<std::string, std::string>>;
struct Row {
    uint32_t family, process;
    LabelList labels;
    double value;
};

}  // namespace

std::vector<std::pair<std::string, std::string>> MetricsServer::deviceLabels(const LiveProcess::Device& d) const
{
    // The labels DCGM exporter puts on its per-GPU series, so that a query can join on them (UUID
    // above all: the one that means the same device in every process and container). Not its
    // modelName: promtool's lint refuses a camelCase label name, and the UUID already joins to it.
    LabelList l{{"device", std::to_string(d.id)}};
    const std::string bus = canonicalBusId(d.pciBusId);
    const auto index = m_nvmlIndex.find(bus);
    l.push_back({"gpu", std::to_string(index != m_nvmlIndex.end() ? index->second : d.id)});
    if (!d.uuid.empty()) l.push_back({"UUID", d.uuid});
    if (!bus.empty()) l.push_back({"pci_bus_id", bus});
    if (!m_hostname.empty()) l.push_back({"Hostname", m_hostname});
    return l;
}

std::vector<std::pair<std::string, LiveProcess::Kernel>> MetricsServer::kernelRows(uint32_t stream, const LiveProcess& p)
{
    std::set<std::string>& named = m_namedKernels[stream];
    if (named.size() < m_kernelSeries) {
        std::vector<std::pair<std::string, LiveProcess::Kernel>> fresh;
        for (const auto& [name, k] : p.kernels)
            if (!named.count(name)) fresh.push_back({name, k});
        std::stable_sort(fresh.begin(), fresh.end(), [](const auto& a, const auto& b) { return a.second.gpuNs > b.second.gpuNs; });
        for (size_t i = 0; i < fresh.size() && named.size() < m_kernelSeries; ++i) named.insert(fresh[i].first);
    }
    // By label: two names alike in their first kKernelLabelMax characters share one series.
    std::map<std::string, LiveProcess::Kernel> byLabel;
    LiveProcess::Kernel other;
    bool anyOther = false;
    for (const auto& [name, k] : p.kernels) {
        LiveProcess::Kernel& x = !named.count(name) ? other : byLabel[textparts::clip(name, kKernelLabelMax)];
        anyOther |= &x == &other;
        x.launches += k.launches;
        x.gpuNs += k.gpuNs;
    }
    std::vector<std::pair<std::string, LiveProcess::Kernel>> rows(byLabel.begin(), byLabel.end());
    if (anyOther) rows.push_back({"other", other});
    return rows;
}

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

MetricsServer::MetricsServer(const std::string& hostPort, const std::string& pluginPath, size_t kernelSeries)
    : m_address(metricsAddress(hostPort)), m_kernelSeries(kernelSeries), m_hostname(hostName()), m_nvmlIndex(nvidiaIndexes())
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
            const LabelList l = with(deviceLabels(d));
            add(GPUSPY_METRIC_LAUNCHES, l, double(d.launchesTotal));
            add(GPUSPY_METRIC_BUSY, l, d.busyRatio);
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
        add(GPUSPY_METRIC_RECORDING, base, p.recording ? 1 : 0);
        for (const auto& [category, n] : p.notRecorded) add(GPUSPY_METRIC_NOT_RECORDED, with({{"category", category}}), double(n));
        if (m_kernelSeries) {
            for (const auto& [name, k] : kernelRows(stream, p)) {
                const LabelList l = with({{"kernel", name}});
                add(GPUSPY_METRIC_KERNEL_LAUNCHES, l, double(k.launches));
                add(GPUSPY_METRIC_KERNEL_GPU_SECONDS, l, double(k.gpuNs) / 1e9);
            }
        }
        for (const auto& [rule, f] : p.findings)
            add(GPUSPY_METRIC_FINDING, with({{"rule", rule}}), f.lastTick == live.ticks() ? 1 : 0);
    }
    for (auto it = m_namedKernels.begin(); it != m_namedKernels.end();)
        it = live.processes().count(it->first) ? std::next(it) : m_namedKernels.erase(it);
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
