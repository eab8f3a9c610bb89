// collector/live/metrics_prometheus.cpp: libgpuspy_metrics.so, the plugin behind `collect --metrics`: the
// metric families on prometheus-cpp's Exposer, fed through the C seam of collector/live/metrics_plugin.h.
// Labels are few-valued (pid, command, device and the device's DCGM-style labels, direction, host_memory,
// mode, sync_kind, rule, category; gpuspy builds them): never call sites, whose number has no bound, and
// kernel names only when asked for (--metrics-kernels N), N of them per process and the rest as "other".
#include "collector/live/metrics_plugin.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#define GS_PLUGIN_EXPORT __attribute__((visibility("default")))

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Labels;

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

struct FamilySpec {
    bool counter;
    const char* name;
    const char* help;
};
// In the order of enum gpuspy_metrics_family.
constexpr FamilySpec kFamilies[GPUSPY_METRIC_FAMILIES] = {
    {true, "gpuspy_kernel_launches_total", "Kernel launches that succeeded, by the calls' device"},
    {false, "gpuspy_gpu_busy_ratio",
     "Share of the last second the device was busy with the process's work (the device timeline of gpuspy report)"},
    {true, "gpuspy_transfer_bytes_total", "Bytes copied or set, by direction, host memory kind and sync/async form"},
    {true, "gpuspy_transfer_host_seconds_total", "Host time inside copy and memset calls"},
    {true, "gpuspy_transfers_total", "Copy and memset calls"},
    {true, "gpuspy_sync_blocked_seconds_total", "Host time blocked in synchronizing calls, explicit and implicit, by kind"},
    {true, "gpuspy_syncs_total", "Synchronizing calls, by kind"},
    {true, "gpuspy_dropped_records_total", "Records the shim could not queue"},
    {true, "gpuspy_shim_overhead_seconds_total", "Time spent in gpuspy's own code on the application's threads"},
    {false, "gpuspy_finding_active", "1 when the rule's finding held in the last second, else 0"},
    {false, "gpuspy_connected_processes", "Processes connected to the collector"},
    {true, "gpuspy_collector_live_records_evicted_total", "Records the live view lost to its memory bound between two ticks"},
    {false, "gpuspy_recording", "1 while the process's calls are recorded, 0 while recording is paused (gpuspy ctl stop, collect --paused)"},
    {true, "gpuspy_calls_not_recorded_total",
     "Hooked calls made while recording was paused, by category: counted, not in the other series"},
    {true, "gpuspy_kernel_launches_by_name_total",
     "Kernel launches by kernel name, template arguments folded (collect --metrics-kernels N: N names, the rest as other)"},
    {true, "gpuspy_kernel_gpu_seconds_total",
     "GPU time of the kernel's launches, scaled to every launch where some were not timed (collect --metrics-kernels N)"},
};

void sayError(char* error, size_t size, const std::string& what)
{
    if (error && size) std::snprintf(error, size, "%s", what.c_str());
}

}  // namespace

struct gpuspy_metrics {
    std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
    std::unique_ptr<prometheus::Exposer> exposer;
    std::vector<Family<Counter>*> counters = std::vector<Family<Counter>*>(GPUSPY_METRIC_FAMILIES);
    std::vector<Family<Gauge>*> gauges = std::vector<Family<Gauge>*>(GPUSPY_METRIC_FAMILIES);
    std::unordered_map<Counter*, double> last;  // what each counter was set to: Increment by the difference
    std::shared_ptr<ScrapeCounter> scrapes = std::make_shared<ScrapeCounter>();
    struct Series {
        std::unordered_set<void*> known;
        std::vector<std::function<void()>> remove;
        bool ended = false;
        uint64_t endedScrapes = 0, endedNs = 0;
    };
    std::unordered_map<uint32_t, Series> series;  // by process

    gpuspy_metrics()
    {
        for (int f = 0; f < GPUSPY_METRIC_FAMILIES; ++f) {
            if (kFamilies[f].counter)
                counters[f] = &prometheus::BuildCounter().Name(kFamilies[f].name).Help(kFamilies[f].help).Register(*registry);
            else
                gauges[f] = &prometheus::BuildGauge().Name(kFamilies[f].name).Help(kFamilies[f].help).Register(*registry);
        }
    }

    // The series of `family` with `labels`, remembered as `process`'s (to remove when it has ended).
    template <class T>
    T& add(Family<T>& family, const Labels& labels, uint32_t process)
    {
        T& metric = family.Add(labels);
        if (process == GPUSPY_METRICS_COLLECTOR) return metric;
        Series& s = series[process];
        if (s.known.insert(&metric).second) {
            s.remove.push_back([&family, &metric, this] {
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

    void update(const gpuspy_metrics_series* all, size_t count, uint64_t now)
    {
        std::unordered_set<uint32_t> present;
        for (size_t i = 0; i < count; ++i) {
            const gpuspy_metrics_series& one = all[i];
            if (one.family >= GPUSPY_METRIC_FAMILIES) continue;
            Labels labels;
            for (uint32_t l = 0; l < one.label_count; ++l) labels[one.labels[l].name] = one.labels[l].value;
            if (one.process != GPUSPY_METRICS_COLLECTOR) present.insert(one.process);
            if (kFamilies[one.family].counter)
                set(add(*counters[one.family], labels, one.process), one.value);
            else
                add(*gauges[one.family], labels, one.process).Set(one.value);
        }
        // The processes the live figures have forgotten (ended, their last records counted).
        const uint64_t scraped = scrapes->scrapes();
        for (auto it = series.begin(); it != series.end();) {
            Series& s = it->second;
            if (present.count(it->first)) {
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
            it = series.erase(it);
        }
    }
};

extern "C" GS_PLUGIN_EXPORT uint32_t gpuspy_metrics_abi_version(void)
{
    return GPUSPY_METRICS_ABI_VERSION;
}

extern "C" GS_PLUGIN_EXPORT gpuspy_metrics* gpuspy_metrics_open(const char* address, char* error, size_t errorSize)
{
    try {
        auto server = std::make_unique<gpuspy_metrics>();
        try {
            server->exposer = std::make_unique<prometheus::Exposer>(address, 2);
        } catch (const std::exception&) {
            sayError(error, errorSize,
                     std::string("cannot serve metrics on ") + address + ": the port is in use or the address is not this host's");
            return nullptr;
        }
        server->exposer->RegisterCollectable(server->registry);
        server->exposer->RegisterCollectable(server->scrapes);
        return server.release();
    } catch (const std::exception& e) {
        sayError(error, errorSize, std::string("cannot serve metrics on ") + address + ": " + e.what());
        return nullptr;
    }
}

extern "C" GS_PLUGIN_EXPORT int gpuspy_metrics_update(gpuspy_metrics* server, const gpuspy_metrics_series* series,
                                                      size_t count, uint64_t nowNs, char* error, size_t errorSize)
{
    try {
        server->update(series, count, nowNs);
        return 1;
    } catch (const std::exception& e) {
        sayError(error, errorSize, std::string("metrics: ") + e.what());
        return 0;
    }
}

extern "C" GS_PLUGIN_EXPORT void gpuspy_metrics_close(gpuspy_metrics* server)
{
    delete server;
}
