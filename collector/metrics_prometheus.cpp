// collector/metrics_prometheus.cpp: the metric families and their labels, on prometheus-cpp's Exposer.
// Labels are few-valued: pid, command (its first word), device, direction, host_memory, mode,
// sync_kind, rule; never kernel names or call sites, whose number has no bound.
#include "collector/metrics.h"

#include "collector/server.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace gpuspy::collect {

bool metricsBuilt()
{
    return true;
}

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Labels;

std::string commandLabel(const std::string& command)
{
    std::string first = command.substr(0, command.find(' '));
    const size_t slash = first.rfind('/');
    if (slash != std::string::npos) first = first.substr(slash + 1);
    if (first.size() > 64) first.resize(64);
    return first;
}

// Counts the scrapes: registered beside the registry, it contributes no metric.
class ScrapeCounter : public prometheus::Collectable {
public:
    std::vector<prometheus::MetricFamily> Collect() const override
    {
        ++m_scrapes;
        return {};
    }
    uint64_t scrapes() const { return m_scrapes; }

private:
    mutable std::atomic<uint64_t> m_scrapes{0};
};

// A process's series stay until two scrapes after its last figures (the second began after them), or
// kKeepEndedNs when nobody scrapes: a server whose workers come and go must not pile up series.
constexpr uint64_t kKeepEndedNs = 300ull * 1000000000ull;

}  // namespace

struct MetricsServer::Impl {
    std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
    std::unique_ptr<prometheus::Exposer> exposer;
    Family<Counter>& launches = prometheus::BuildCounter()
        .Name("gpuspy_kernel_launches_total").Help("Kernel launches that succeeded, by the calls' device").Register(*registry);
    Family<Gauge>& busy = prometheus::BuildGauge()
        .Name("gpuspy_gpu_busy_ratio").Help("Share of the last second the device was busy with the process's work "
                                           "(the device timeline of gpuspy report)").Register(*registry);
    Family<Counter>& transferBytes = prometheus::BuildCounter()
        .Name("gpuspy_transfer_bytes_total").Help("Bytes copied or set, by direction, host memory kind and sync/async form").Register(*registry);
    Family<Counter>& transferSeconds = prometheus::BuildCounter()
        .Name("gpuspy_transfer_host_seconds_total").Help("Host time inside copy and memset calls").Register(*registry);
    Family<Counter>& transfers = prometheus::BuildCounter()
        .Name("gpuspy_transfers_total").Help("Copy and memset calls").Register(*registry);
    Family<Counter>& blocked = prometheus::BuildCounter()
        .Name("gpuspy_sync_blocked_seconds_total").Help("Host time blocked in synchronizing calls, explicit and implicit, by kind").Register(*registry);
    Family<Counter>& syncs = prometheus::BuildCounter()
        .Name("gpuspy_syncs_total").Help("Synchronizing calls, by kind").Register(*registry);
    Family<Counter>& dropped = prometheus::BuildCounter()
        .Name("gpuspy_dropped_records_total").Help("Records the shim could not queue").Register(*registry);
    Family<Counter>& overhead = prometheus::BuildCounter()
        .Name("gpuspy_shim_overhead_seconds_total").Help("Time spent in gpuspy's own code on the application's threads").Register(*registry);
    Family<Gauge>& findings = prometheus::BuildGauge()
        .Name("gpuspy_finding_active").Help("1 when the rule's finding held in the last second, else 0").Register(*registry);
    Family<Gauge>& connected = prometheus::BuildGauge()
        .Name("gpuspy_connected_processes").Help("Processes connected to the collector").Register(*registry);
    Family<Counter>& evicted = prometheus::BuildCounter()
        .Name("gpuspy_collector_live_records_evicted_total").Help("Records the live view lost to its memory bound between two ticks").Register(*registry);
    std::unordered_map<Counter*, double> last;  // what each counter was set to: Increment by the difference
    std::shared_ptr<ScrapeCounter> scrapes = std::make_shared<ScrapeCounter>();
    struct Series {
        std::unordered_set<void*> known;
        std::vector<std::function<void()>> remove;
        bool ended = false;
        uint64_t endedScrapes = 0, endedNs = 0;
    };
    std::unordered_map<uint32_t, Series> series;  // by stream
    Series* current = nullptr;                    // the process update() is at

    template <class T>
    T& add(Family<T>& family, const Labels& labels)
    {
        T& metric = family.Add(labels);
        if (current->known.insert(&metric).second) {
            current->remove.push_back([&family, &metric, this] {
                if constexpr (std::is_same_v<T, Counter>) last.erase(&metric);
                family.Remove(&metric);
            });
        }
        return metric;
    }
    void set(Counter& c, double total)
    {
        double& l = last[&c];
        if (total > l) c.Increment(total - l);
        l = total;
    }
};

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

MetricsServer::MetricsServer(const std::string& hostPort) : m(std::make_unique<Impl>()), m_address(metricsAddress(hostPort))
{
    try {
        m->exposer = std::make_unique<prometheus::Exposer>(m_address, 2);
    } catch (const std::exception&) {
        throw std::runtime_error("cannot serve metrics on " + m_address + ": the port is in use or the address is not this host's");
    }
    m->exposer->RegisterCollectable(m->registry);
    m->exposer->RegisterCollectable(m->scrapes);
}

MetricsServer::~MetricsServer() = default;

void MetricsServer::update(const LiveStats& live, size_t connectedNow)
{
    m->connected.Add({}).Set(double(connectedNow));
    m->set(m->evicted.Add({}), double(live.evictedRecords()));
    for (const auto& [stream, p] : live.processes()) {
        m->current = &m->series[stream];
        const Labels base{{"pid", std::to_string(p.pid)}, {"command", commandLabel(p.command)}};
        auto with = [&](std::initializer_list<std::pair<const std::string, std::string>> more) {
            Labels l = base;
            l.insert(more);
            return l;
        };
        for (const auto& d : p.devices) {
            m->set(m->add(m->launches, with({{"device", std::to_string(d.id)}})), double(d.launchesTotal));
            m->add(m->busy, with({{"device", std::to_string(d.id)}})).Set(d.busyRatio);
        }
        for (const auto& [k, t] : p.transfers) {
            const Labels l = with({{"direction", t.direction}, {"host_memory", t.hostMemory}, {"mode", t.mode}});
            m->set(m->add(m->transferBytes, l), double(t.bytesTotal));
            m->set(m->add(m->transferSeconds, l), double(t.hostNsTotal) / 1e9);
            m->set(m->add(m->transfers, l), double(t.countTotal));
        }
        for (const auto& [kind, s] : p.syncs) {
            const Labels l = with({{"sync_kind", kind}});
            m->set(m->add(m->blocked, l), double(s.blockedNsTotal) / 1e9);
            m->set(m->add(m->syncs, l), double(s.countTotal));
        }
        m->set(m->add(m->dropped, base), double(p.droppedRecords));
        m->set(m->add(m->overhead, base), double(p.overheadNs) / 1e9);
        for (const auto& [rule, f] : p.findings)
            m->add(m->findings, with({{"rule", rule}})).Set(f.lastTick == live.ticks() ? 1 : 0);
    }
    // The processes the live figures have forgotten (ended, their last records counted).
    const uint64_t now = monotonicNs(), scraped = m->scrapes->scrapes();
    for (auto it = m->series.begin(); it != m->series.end();) {
        Impl::Series& s = it->second;
        if (live.processes().count(it->first)) {
            ++it;
            continue;
        }
        if (!s.ended) {
            s.ended = true;
            s.endedScrapes = scraped;
            s.endedNs = now;
        }
        if (scraped < s.endedScrapes + 2 && now - s.endedNs < kKeepEndedNs) {
            ++it;
            continue;
        }
        for (auto& remove : s.remove) remove();
        it = m->series.erase(it);
    }
}

}  // namespace gpuspy::collect
