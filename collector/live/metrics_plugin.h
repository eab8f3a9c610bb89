/* collector/live/metrics_plugin.h: the C seam between `gpuspy` and libgpuspy_metrics.so, the plugin that
 * holds prometheus-cpp. gpuspy dlopen()s the plugin only for `collect --metrics`: Debian ships
 * prometheus-cpp as shared libraries only, and the release tarball's bin/gpuspy may need nothing beyond
 * glibc and libstdc++, so the plugin and the libraries it needs travel next to it (lib/gpuspy/) and
 * nothing else loads them. Plain C types only: no C++ object or exception crosses this line. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a declaration below changes: gpuspy refuses a plugin of another version. */
#define GPUSPY_METRICS_ABI_VERSION 2u

/* The metric families; their names, help texts and types are the plugin's (collector/live/metrics_prometheus.cpp). */
enum gpuspy_metrics_family {
    GPUSPY_METRIC_LAUNCHES,           /* counter gpuspy_kernel_launches_total */
    GPUSPY_METRIC_BUSY,               /* gauge   gpuspy_gpu_busy_ratio */
    GPUSPY_METRIC_TRANSFER_BYTES,     /* counter gpuspy_transfer_bytes_total */
    GPUSPY_METRIC_TRANSFER_SECONDS,   /* counter gpuspy_transfer_host_seconds_total */
    GPUSPY_METRIC_TRANSFERS,          /* counter gpuspy_transfers_total */
    GPUSPY_METRIC_SYNC_BLOCKED,       /* counter gpuspy_sync_blocked_seconds_total */
    GPUSPY_METRIC_SYNCS,              /* counter gpuspy_syncs_total */
    GPUSPY_METRIC_DROPPED,            /* counter gpuspy_dropped_records_total */
    GPUSPY_METRIC_OVERHEAD,           /* counter gpuspy_shim_overhead_seconds_total */
    GPUSPY_METRIC_FINDING,            /* gauge   gpuspy_finding_active */
    GPUSPY_METRIC_CONNECTED,          /* gauge   gpuspy_connected_processes */
    GPUSPY_METRIC_EVICTED,            /* counter gpuspy_collector_live_records_evicted_total */
    GPUSPY_METRIC_RECORDING,          /* gauge   gpuspy_recording */
    GPUSPY_METRIC_NOT_RECORDED,       /* counter gpuspy_calls_not_recorded_total */
    GPUSPY_METRIC_KERNEL_LAUNCHES,    /* counter gpuspy_kernel_launches_by_name_total (opt-in) */
    GPUSPY_METRIC_KERNEL_GPU_SECONDS, /* counter gpuspy_kernel_gpu_seconds_total (opt-in) */
    GPUSPY_METRIC_FAMILIES
};

/* The process of a series that belongs to the collector itself, not to a traced process. */
#define GPUSPY_METRICS_COLLECTOR UINT32_MAX

struct gpuspy_metrics_label {
    const char* name;
    const char* value;
};

/* One series' figure after a tick: a counter's total so far, or a gauge's value. `process` (the
 * collector's stream id) groups a process's series: a process absent from an update has ended, and
 * its series leave /metrics (two scrapes later, or after five minutes when nobody scrapes). */
struct gpuspy_metrics_series {
    uint32_t family; /* enum gpuspy_metrics_family */
    uint32_t process;
    const struct gpuspy_metrics_label* labels;
    uint32_t label_count;
    double value;
};

typedef struct gpuspy_metrics gpuspy_metrics;

uint32_t gpuspy_metrics_abi_version(void);
/* Serves /metrics on `address` ("HOST:PORT"); NULL, with one line in `error`, when it cannot. */
gpuspy_metrics* gpuspy_metrics_open(const char* address, char* error, size_t error_size);
/* Every series of the tick at `now_ns` (CLOCK_MONOTONIC); 0, with one line in `error`, on failure. */
int gpuspy_metrics_update(gpuspy_metrics* server, const struct gpuspy_metrics_series* series, size_t count,
                          uint64_t now_ns, char* error, size_t error_size);
void gpuspy_metrics_close(gpuspy_metrics* server);

#ifdef __cplusplus
}
#endif
