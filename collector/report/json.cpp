// collector/report/json.cpp: the Report as JSON, schema "gpuspy.report/1". Keys appear in a fixed
// order; times are integer nanoseconds, sizes integer bytes; fields are only ever added, never renamed.
//
// Top level: schema, options {top, pid}, bad_streams, notes [string], and the sections below, each an
// array except launches. The first keys of each entry are the contract of the issue; the rest are extras.
//   processes  pid ppid command wall_ns cuda_api_ns cuda_api_pct gpuspy_overhead_ns dropped_records
//              records_made calls threads active_begin_ns active_end_ns device_ops timed_ops
//              sampled_out_ops ended stream_error rank local_rank world_size (-1: unknown) launcher host
//              (who the process is: its launcher's variables, its host name) capture (the file it came
//              from when several are read as one run) cpu_wait_ns (threads ready but waiting for a CPU)
//              gpu_timing {spent_ns record_ns bookkeeping_ns choosing_ns drain_ns over_ns budget_pct timed_ops
//              untimed_ops set_aside_late_end set_aside_held_up}: what GPU timing cost the threads (every part
//              charged to their budget, earned over over_ns) and the spans it set aside as untrustworthy
//   clock_alignment (several captures read as one run only) capture shift_ns wall_shift_ns basis same_host pair_error_ns
//              matched residual_spread_ns residual_max_ns: how each capture was put on the first's clock
//   outside    pid ppid command why cuda_driver capture merged: the processes of a tree `record` followed that
//              are not in its streams: why "no_preload" (LD_PRELOAD not kept), "static" (a static program),
//              "own_capture" (no GPUSPY_SOCKET: it wrote capture, merged: read into this one), "unseen" (it exec'd
//              and ended before record could read what it ran: with or without gpuspy, unknown); cuda_driver
//              "loaded" (seen mapped), "not_seen" (its mappings read while it ran held none), "unknown"
//   devices    id name busy_ns busy_pct | pid active_ns ops timed_ops sampled_out_ops kernel_ns
//              transfer_ns other_ns idle_gap_ns largest_gap_ns gaps starved_ns waiting_for_work_ns (idle while
//              the program waited for work: paused over 1 ms, the process under a tenth of a CPU) upper_bound_ops
//              upper_bound_ns (timed ops whose span is only an upper bound, see gpu_time below, and
//              their summed lengths: busy_ns includes them) busy_basis ("measured": every op timed;
//              "upper_bound": all timed, some spans only upper bounds, busy_ns_min counts none of them;
//              "estimated": untimed ops placed on the device timeline, collector/timeline/device_timeline.h)
//              busy_ns_min busy_ns_max busy_pct_min busy_pct_max (the interval of the estimate: short
//              and long durations for the untimed ops; equal to busy_ns when measured) estimated_ops
//              lost_timing_ops (timed by the shim, span lost to a late end event) unknown_duration_ops
//              held_up_ops held_up_ns (of the lost ones, those whose thread was off the CPU inside the
//              call, and their calls' summed host time: each op's place is unknown within its call,
//              the idle gaps may be off by up to held_up_ns) uuid (cuDeviceGetUuid, "GPU-...": "" when
//              unknown) host (its process's)
//              idle_gap_ns, largest_gap_ns, gaps and starved_ns are read off the same timeline
//   streams    pid device name ops estimated_ops busy_ns busy_ns_min busy_ns_max busy_pct
//   apis       api runtime display category errors errors_by_code[{code name calls}] count total_ns avg_ns median_ns min_ns max_ns p99_ns
//   transfers  direction (HtoD DtoH DtoD PtoP Memset; HtoH Prefetch Unknown if seen) host_memory
//              (pageable pinned managed device unknown) mode (sync async) count bytes gpu_ns host_ns
//              gbps | gbps_basis (gpu: timed bytes / gpu_ns; host: bytes / host_ns; graph_estimate: graph
//              nodes' bytes / graph_gpu_ns) timed_count
//              timed_bytes gpu_time (how gpu_ns was obtained: "measured" from CUDA events; "upper_bound"
//              when upper_bound_count of the timed ops blocked their call on an idle stream, where the
//              events cannot see when the device work began: their spans include the driver's host
//              time, so gpu_ns is an upper bound and a gpu-based gbps a lower bound; "none" when no op
//              was timed) upper_bound_count upper_bound_gpu_ns (their part of gpu_ns) host{stats}
//              size_buckets[{label max_bytes count bytes}] apis callsites[id] graph_count graph_gpu_ns
//              (mode "graph": copies and memsets run as graph nodes, counted at their graph launch's
//              call site; graph_gpu_ns is their launches' measured time split over the nodes, an estimate)
//   kernels    name count gpu_ns median_gpu_ns launch_host_ns | mangled timed_count estimated_gpu_ns
//              gpu{stats} median_launch_host_ns launch_bound callsites[id] graph_count (of count, runs as
//              a graph node) graph_gpu_ns (their estimated share of their graph launches' time; in
//              estimated_gpu_ns, not in gpu_ns) launch_config ("grid 64x1x1 block 128x1x1": with --by-launch-config,
//              a row per kernel and grid/block)
//   host_functions {count stream_ns (the time the timed ones held their stream) median_stream_ns
//              launch_host_ns | timed_count estimated_stream_ns (scaled to every one, graph nodes' shares
//              included) stream{stats} median_launch_host_ns graph_count graph_stream_ns callsites[id]}
//              (cudaLaunchHostFunc and graph host nodes: host code run in stream order, never kernels;
//              not in kernels, launches or launch-bound findings)
//   launches   {count host_ns median_host_ns launch_bound_kernels(number) | launch_bound_kernel_names
//              p99_host_ns per_second host{stats} timed sampled_out captured failed graph_launches
//              graph_host_ns graph_gpu_ns graph_nodes graphs_unknown (launches of graphs whose nodes were
//              not seen: node kinds the shim does not hook) graph_event_nodes (event record and wait nodes
//              the graph launches ran: counted, never timed) idle_gap_ns largest_idle_gap_ns sampling_note}
//   syncs      api implicit count blocked_ns gpu_busy_ns | display kind not_ready host{stats} callsites
//              upper_bound_count (calls whose own span, an upper bound, is in gpu_busy_ns: with any,
//              gpu_busy_ns is an upper bound; busy intervals include every upper-bound span)
//   nvtx       name ranges range_ns calls cuda_api_ns transfers transfer_bytes transfer_host_ns launches
//              launch_host_ns syncs sync_blocked_ns gpu_ns | upper_bound_count upper_bound_gpu_ns (calls
//              inside whose GPU time is only an upper bound, as in transfers, and their part of gpu_ns:
//              with any, gpu_ns is an upper bound)
//   collectives  NCCL's operations per process, communicator, rank and op (analyze.h CollectiveRow): pid
//              comm_id rank nranks nodes op point_to_point datatype algorithm ("RING/SIMPLE") calls bytes
//              (message sizes as nccl-tests counts them) max_bytes launched (matched to their kernel launch)
//              timed fused (carried by a launch with others: time split by bytes) gpu_ns timed_bytes
//              estimated_gpu_ns alg_bw_gbps bus_bw_gbps with_peers (timed with every rank in the capture)
//              wait_ns (their kernels' time before the last rank's started) move_ns site; collectives_dropped
//   stragglers per communicator and rank that arrived last (over 10 us after the rank before it) at some of
//              its collectives with every rank timed: pid comm_id rank nranks device collectives (its launches
//              carrying one) compared (every rank timed) median_interval_ns (between them) last late_ns
//              median_late_ns others_wait_ns (the other ranks' kernels' wait for it) host_late (its launch
//              came late) gpu_late (its stream was busy) median_host_lag_ns ordered (collectives with one
//              rank untimed whose last rank its launch tells: it began after every other kernel had started)
//              last_ordered (of which this rank) late_low_ns (summed lower bounds of its lateness there)
//   memory     pid device (-1: pinned host) space (device managed pinned_host) allocations releases failed
//              allocated_bytes peak_bytes peak_at_ns peak_until_ns (the first release after the peak) in_use_end_bytes unknown_releases (of memory never
//              seen allocated: allocated before the capture began) untracked attached (gpuspy attach: memory allocated
//              before the attach is unknown, not in the figures) at_peak[{holding}]
//              live_at_end[{holding first_at_ns last_at_ns kind (leak: made again and again through the
//              run; kept: a setup's memory kept until exit)}] failures[{at_ns api bytes (asked) error
//              callsite label in_use_bytes pool_unused_min_bytes holders[{holding}]}] series[[ns bytes]]
//              pools[{pool (default created) release_threshold_bytes release_threshold_set allocations
//              peak_used_bytes used_end_bytes peak_reserved_min_bytes reserved_min_end_bytes unused_min_end_bytes
//              grows regrows (grew back into memory it had given back) regrow_bytes releases_at_sync trims
//              released_bytes grow_host_ns served served_host_ns destroyed regrow_callsites}] held_series[[ns bytes]] (in use plus
//              what pools keep unused) peak_held_min_bytes peak_held_at_ns vmm_reserved_peak_bytes
//              vmm_reserved_end_bytes (VMM address space reserved: not memory) (a pool's reservation is a floor by
//              CUDA's documented rule: memory_pools.cpp) (collector/analyze/memory.cpp;
//              times from the process's first CUDA call; stream-ordered allocations and frees count when their stream
//              is estimated to reach them)
//              {holding} = callsite (null: the sites past the 7 largest, or none known) label bytes allocations
//   callsites  id category (transfer launch sync alloc) frames[{function file line module offset
//              address inlined app}] count ns | label site_frame apis library_call library_own (thread|exit|"")
//   capture_windows {used left_out left_out_launches left_out_after empty_windows windows[{pid index trigger
//              ended_by begin_ns end_ns calls launches transfers syncs allocs left_out_before
//              left_out_launches_before empty}]} (record --capture-range, --delay, --duration, ctl start/stop)
//   findings   rule severity (high medium low info) message count ns estimated_savings_ns
//              estimated_savings_bound (estimate, at_most, at_least: see the message) callsites[id] |
//              evidence{name: number} host_cpu_savings_ns (host CPU time the fix frees, not wall time:
//              spin-wait) overlaps[rule] (findings on some of the same calls: savings that do not add) |
//              prediction{basis ("replay") fix saving_ns low_ns high_ns
//              formula_saving_ns formula_bound wall_ns fixed_wall_ns calls_changed calls_kept kept_because
//              replay_error_pct processes costs[] | window{extrapolated (true) calls process_calls
//              finding_calls_in_window finding_calls finding_ns_in_window finding_ns}} (where the replay predicted the saving, which is then
//              estimated_savings_ns: collector/replay/predict.h; `window` where a process past the replay's
//              budget was replayed on a window of its latest calls and the saving extrapolated, an
//              estimate whose interval is low_ns..high_ns)
//   critical_path [{pid wall_ns (the replay's, unchanged) replay_error_pct parts[{kind (host device latency)
//              what ns tid | device stream per_thread (device, latency)}] (the stretches of the run's critical
//              path summed per thread, stream, submission latency, largest first) off_path[{tid thread end_ns
//              cuda_ns}] (threads none of whose time is on it:
//              shortening their calls would not shorten the run)}] (collector/replay/predict.h)
//   findings_savings_ns  the findings' savings together, each group of overlapping findings counted once
//              (by its largest: combinedSavingsNs in collector/analyze/analyze.h)
//   runs       (captures of `record --repeat N` only; the sections above are then the run of median
//              wall's) run exit_status pids headline{wall_ns cuda_api_ns gpu_busy_ns launches
//              sync_blocked_ns transfer_bytes}; median_run; spread{wide_pct headline kernels transfers
//              findings: [{name median min max runs spread_pct wide}]} (collector/compare/repeat_render.cpp)
// {stats} = {count total_ns avg_ns median_ns min_ns max_ns p99_ns}. Call site ids index "callsites".
#include "collector/report/report.h"

#include "collector/model/api_names.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace gpuspy::collect {

namespace {

using Json = nlohmann::ordered_json;

Json stats(const DurationStats& s)
{
    return Json{{"count", s.count}, {"total_ns", s.total}, {"avg_ns", s.avg}, {"median_ns", s.median},
                {"min_ns", s.min}, {"max_ns", s.max}, {"p99_ns", s.p99}};
}

Json ids(const std::vector<uint32_t>& v)
{
    Json a = Json::array();
    for (uint32_t x : v) a.push_back(x);
    return a;
}

Json strings(const std::vector<std::string>& v)
{
    Json a = Json::array();
    for (const std::string& s : v) a.push_back(s);
    return a;
}

}  // namespace

nlohmann::ordered_json clockAlignmentJson(const ClockAlignment& a)
{
    return Json{{"capture", a.name}, {"shift_ns", a.shiftNs}, {"wall_shift_ns", a.wallShiftNs},
                {"basis", a.basis}, {"same_host", a.sameHost}, {"pair_error_ns", a.pairErrorNs}, {"matched", a.matched},
                {"residual_spread_ns", a.residualSpreadNs}, {"residual_max_ns", a.residualMaxNs}};
}

nlohmann::ordered_json reportJson(const Report& r)
{
    Json j;
    j["schema"] = r.schema;
    j["options"] = Json{{"top", r.options.top}, {"pid", r.options.pid}};
    j["bad_streams"] = r.badStreams;
    j["notes"] = strings(r.notes);

    Json& procs = j["processes"] = Json::array();
    for (const ProcessSummary& p : r.processes)
        procs.push_back(Json{{"pid", p.pid}, {"ppid", p.ppid}, {"command", p.command}, {"wall_ns", p.wallNs},
                             {"cuda_api_ns", p.cudaApiNs}, {"cuda_api_pct", p.cudaApiPct},
                             {"gpuspy_overhead_ns", p.gpuspyOverheadNs}, {"dropped_records", p.droppedRecords},
                             {"records_made", p.recordsMade}, {"calls", p.calls}, {"threads", p.threads},
                             {"active_begin_ns", p.activeBeginNs}, {"active_end_ns", p.activeEndNs},
                             {"device_ops", p.deviceOps}, {"timed_ops", p.timedOps}, {"sampled_out_ops", p.sampledOutOps},
                             {"ended", p.ended}, {"stream_error", p.streamError},
                             {"rank", p.rank}, {"local_rank", p.localRank}, {"world_size", p.worldSize},
                             {"launcher", p.launcher}, {"host", p.host}, {"capture", p.capture}});
    for (size_t i = 0; i < r.processes.size(); ++i) {
        const ProcessSummary& p = r.processes[i];
        if (p.cpuWaitKnown) procs[i]["cpu_wait_ns"] = p.cpuWaitNs;
        if (const ProcessSummary::GpuTimingCost& g = p.gpuTiming; g.known)
            procs[i]["gpu_timing"] = Json{{"spent_ns", g.spentNs()}, {"record_ns", g.recordNs},
                                          {"bookkeeping_ns", g.bookkeepingNs}, {"choosing_ns", g.choosingNs},
                                          {"drain_ns", g.drainNs}, {"over_ns", g.overNs},
                                          {"budget_pct", double(g.budgetPpm) / 10000.0}, {"timed_ops", g.timedOps},
                                          {"untimed_ops", g.untimedOps}, {"set_aside_late_end", g.lateEndSpans},
                                          {"set_aside_held_up", g.heldUpSpans}};
    }

    if (!r.clockAlignment.empty()) {
        Json& clocks = j["clock_alignment"] = Json::array();
        for (const ClockAlignment& a : r.clockAlignment) clocks.push_back(clockAlignmentJson(a));
    }

    Json& outside = j["outside"] = Json::array();
    for (const OutsideProcess& p : r.outside)
        outside.push_back(Json{{"pid", p.pid}, {"ppid", p.ppid}, {"command", p.command}, {"why", outsideWhyName(p.why)},
                               {"cuda_driver", outsideCudaName(p.cuda)}, {"capture", p.capturePath}, {"merged", p.merged}});

    Json& devs = j["devices"] = Json::array();
    for (const DeviceSummary& d : r.devices)
        devs.push_back(Json{{"id", d.id}, {"name", d.name}, {"busy_ns", d.busyNs}, {"busy_pct", d.busyPct},
                            {"pid", d.pid}, {"active_ns", d.activeNs}, {"ops", d.ops}, {"timed_ops", d.timedOps},
                            {"sampled_out_ops", d.sampledOutOps}, {"kernel_ns", d.kernelNs},
                            {"transfer_ns", d.transferNs}, {"other_ns", d.otherNs}, {"idle_gap_ns", d.idleGapNs},
                            {"largest_gap_ns", d.largestGapNs}, {"gaps", d.gaps}, {"starved_ns", d.starvedNs},
                            {"waiting_for_work_ns", d.waitingNs}, {"starved_in_library_ns", d.starvedInLibraryNs},
                            {"starved_libraries", strings(d.starvedLibraries)}, {"idle_in_library_ns", d.idleInLibraryNs},
                            {"upper_bound_ops", d.upperBoundOps}, {"upper_bound_ns", d.upperBoundNs},
                            {"busy_basis", d.busyBasis}, {"busy_ns_min", d.busyLoNs}, {"busy_ns_max", d.busyHiNs},
                            {"busy_pct_min", d.busyPctLo}, {"busy_pct_max", d.busyPctHi},
                            {"estimated_ops", d.estimatedOps}, {"lost_timing_ops", d.lostOps},
                            {"unknown_duration_ops", d.unknownOps}, {"held_up_ops", d.heldUpOps},
                            {"held_up_ns", d.heldUpNs}, {"uuid", d.uuid}, {"host", d.host}});

    Json& streams = j["streams"] = Json::array();
    for (const StreamSummary& x : r.streams)
        streams.push_back(Json{{"pid", x.pid}, {"device", x.device}, {"name", x.name}, {"ops", x.ops},
                               {"estimated_ops", x.estimatedOps}, {"busy_ns", x.busyNs}, {"busy_ns_min", x.busyLoNs},
                               {"busy_ns_max", x.busyHiNs}, {"busy_pct", x.busyPct}});

    Json& apis = j["apis"] = Json::array();
    for (const ApiRow& a : r.apis) {
        Json row{{"api", a.api}, {"runtime", a.runtime}, {"display", a.display},
                 {"category", a.category}, {"errors", a.errors}};
        Json codes = Json::array();
        for (const ApiRow::ErrorCode& e : a.errorCodes) codes.push_back(Json{{"code", e.code}, {"name", e.name}, {"calls", e.calls}});
        row["errors_by_code"] = std::move(codes);
        row.update(stats(a.host));
        apis.push_back(std::move(row));
    }

    Json& transfers = j["transfers"] = Json::array();
    for (const TransferRow& t : r.transfers) {
        Json buckets = Json::array();
        for (const SizeBucket& b : t.buckets)
            buckets.push_back(Json{{"label", b.label}, {"max_bytes", b.maxBytes}, {"count", b.count}, {"bytes", b.bytes}});
        transfers.push_back(Json{{"direction", t.direction}, {"host_memory", t.hostMemory}, {"mode", t.mode},
                                 {"count", t.count}, {"bytes", t.bytes}, {"gpu_ns", t.gpuNs}, {"host_ns", t.hostNs},
                                 {"gbps", t.gbps}, {"gbps_basis", t.gbpsBasis}, {"timed_count", t.timedCount},
                                 {"timed_bytes", t.timedBytes}, {"gpu_time", t.gpuTime()},
                                 {"upper_bound_count", t.upperBoundCount}, {"upper_bound_gpu_ns", t.upperBoundGpuNs},
                                 {"graph_count", t.graphCount}, {"graph_gpu_ns", t.graphGpuNs},
                                 {"host", stats(t.host)}, {"size_buckets", buckets},
                                 {"apis", strings(t.apis)}, {"callsites", ids(t.callsites)}});
    }

    Json& kernels = j["kernels"] = Json::array();
    for (const KernelRow& k : r.kernels) {
        kernels.push_back(Json{{"name", k.name}, {"count", k.count}, {"gpu_ns", k.gpuNs}, {"median_gpu_ns", k.gpu.median},
                               {"launch_host_ns", k.launchHostNs}, {"mangled", k.mangled}, {"timed_count", k.timedCount},
                               {"estimated_gpu_ns", k.estimatedGpuNs}, {"gpu", stats(k.gpu)},
                               {"median_launch_host_ns", k.medianLaunchHostNs}, {"launch_bound", k.launchBound},
                               {"empty_stream_launches", k.emptyStreamLaunches},
                               {"graph_count", k.graphCount}, {"graph_gpu_ns", k.graphGpuNs},
                               {"callsites", ids(k.callsites)}});
        if (!k.launchConfig.empty()) kernels.back()["launch_config"] = k.launchConfig;
    }

    const KernelRow& h = r.hostFunctions;
    j["host_functions"] = Json{{"count", h.count}, {"stream_ns", h.gpuNs}, {"median_stream_ns", h.gpu.median},
                               {"launch_host_ns", h.launchHostNs}, {"timed_count", h.timedCount},
                               {"estimated_stream_ns", h.estimatedGpuNs}, {"stream", stats(h.gpu)},
                               {"median_launch_host_ns", h.medianLaunchHostNs}, {"graph_count", h.graphCount},
                               {"graph_stream_ns", h.graphGpuNs}, {"callsites", ids(h.callsites)}};

    const LaunchSummary& L = r.launches;
    j["launches"] = Json{{"count", L.count}, {"host_ns", L.hostNs}, {"median_host_ns", L.medianHostNs},
                         {"launch_bound_kernels", L.launchBoundKernels},
                         {"launch_bound_kernel_names", strings(L.launchBoundNames)}, {"p99_host_ns", L.p99HostNs},
                         {"per_second", L.perSecond}, {"host", stats(L.host)}, {"timed", L.timed},
                         {"sampled_out", L.sampledOut}, {"captured", L.captured}, {"failed", L.failed},
                         {"graph_launches", L.graphLaunches}, {"graph_host_ns", L.graphHostNs},
                         {"graph_gpu_ns", L.graphGpuNs}, {"graph_nodes", L.graphNodes},
                         {"graphs_unknown", L.graphsUnknown}, {"graph_event_nodes", L.graphEventNodes}, {"idle_gap_ns", L.idleGapNs},
                         {"largest_idle_gap_ns", L.largestGapNs}, {"sampling_note", L.samplingNote}};

    Json& syncs = j["syncs"] = Json::array();
    for (const SyncRow& s : r.syncs)
        syncs.push_back(Json{{"api", s.api}, {"implicit", s.implicit}, {"count", s.count}, {"blocked_ns", s.blockedNs},
                             {"gpu_busy_ns", s.gpuBusyNs}, {"display", s.display}, {"kind", s.kind},
                             {"not_ready", s.notReady}, {"host", stats(s.host)}, {"callsites", ids(s.callsites)},
                             {"upper_bound_count", s.upperBoundCount}});

    Json& nvtx = j["nvtx"] = Json::array();
    for (const NvtxRow& n : r.nvtx)
        nvtx.push_back(Json{{"name", n.name}, {"ranges", n.ranges}, {"range_ns", n.rangeNs}, {"calls", n.calls},
                            {"cuda_api_ns", n.cudaApiNs}, {"transfers", n.transfers}, {"transfer_bytes", n.transferBytes},
                            {"transfer_host_ns", n.transferHostNs}, {"launches", n.launches},
                            {"launch_host_ns", n.launchHostNs}, {"syncs", n.syncs}, {"sync_blocked_ns", n.syncBlockedNs},
                            {"gpu_ns", n.gpuNs}, {"upper_bound_count", n.upperBoundCount},
                            {"upper_bound_gpu_ns", n.upperBoundGpuNs}});

    Json& colls = j["collectives"] = Json::array();
    for (const CollectiveRow& c : r.collectives)
        colls.push_back(Json{{"pid", c.pid}, {"comm_id", c.commId}, {"rank", c.rank}, {"nranks", c.nranks}, {"nodes", c.nNodes},
                             {"op", c.op}, {"point_to_point", c.pointToPoint}, {"datatype", c.datatype},
                             {"algorithm", c.algorithm}, {"calls", c.calls}, {"bytes", c.bytes}, {"max_bytes", c.maxBytes},
                             {"launched", c.launched}, {"timed", c.timed}, {"fused", c.fused}, {"gpu_ns", c.gpuNs},
                             {"timed_bytes", c.timedBytes}, {"estimated_gpu_ns", c.estimatedGpuNs},
                             {"alg_bw_gbps", c.algBwGBps}, {"bus_bw_gbps", c.busBwGBps}, {"with_peers", c.withPeers},
                             {"wait_ns", c.waitNs}, {"move_ns", c.moveNs}, {"site", c.site}});
    j["collectives_dropped"] = r.collectivesDropped;
    Json& late = j["stragglers"] = Json::array();
    for (const StragglerRow& s : r.stragglers)
        late.push_back(Json{{"pid", s.pid}, {"comm_id", s.commId}, {"rank", s.rank}, {"nranks", s.nranks}, {"device", s.device},
                            {"collectives", s.collectives}, {"compared", s.compared},
                            {"median_interval_ns", s.medianIntervalNs}, {"last", s.last}, {"late_ns", s.lateNs}, {"median_late_ns", s.medianLateNs},
                            {"others_wait_ns", s.othersWaitNs}, {"host_late", s.hostLate}, {"gpu_late", s.gpuLate},
                            {"median_host_lag_ns", s.medianHostLagNs}, {"ordered", s.ordered},
                            {"last_ordered", s.lastOrdered}, {"late_low_ns", s.lateLowNs}});

    Json& windows = j["capture_windows"] = Json::object();
    const CaptureWindows& cw = r.captureWindows;
    windows["used"] = cw.used;
    windows["left_out"] = cw.leftOut;
    windows["left_out_launches"] = cw.leftOutLaunches;
    windows["left_out_after"] = cw.leftOutAfter;
    windows["empty_windows"] = cw.emptyWindows;
    Json& rows = windows["windows"] = Json::array();
    for (const CaptureWindowRow& w : cw.rows)
        rows.push_back(Json{{"pid", w.pid}, {"index", w.index}, {"trigger", w.trigger}, {"ended_by", w.endedBy},
                            {"begin_ns", w.beginNs}, {"end_ns", w.endNs}, {"calls", w.calls}, {"launches", w.launches},
                            {"transfers", w.transfers}, {"syncs", w.syncs}, {"allocs", w.allocs},
                            {"left_out_before", w.leftOutBefore}, {"left_out_launches_before", w.leftOutLaunchesBefore},
                            {"empty", w.empty()}});

    Json& memory = j["memory"] = Json::array();
    auto holding = [&](const MemoryHolding& h) {
        const bool known = h.callsite < r.callsites.size();
        return Json{{"callsite", known ? Json(h.callsite) : Json()},
                    {"label", known ? r.callsites[h.callsite].label : std::string("(other sites)")},
                    {"bytes", h.bytes}, {"allocations", h.allocations}};
    };
    for (const MemoryRow& m : r.memory) {
        Json atPeak = Json::array(), live = Json::array(), failures = Json::array(), series = Json::array();
        for (const MemoryHolding& h : m.atPeak) atPeak.push_back(holding(h));
        for (const MemoryLive& l : m.liveAtEnd) {
            Json x = holding(l);
            x["first_at_ns"] = l.firstNs;
            x["last_at_ns"] = l.lastNs;
            x["kind"] = l.leak ? "leak" : "kept";
            live.push_back(std::move(x));
        }
        for (const MemoryFailure& f : m.failures) {
            Json holders = Json::array();
            for (const MemoryHolding& h : f.holders) holders.push_back(holding(h));
            Json site = holding(MemoryHolding{f.callsite, 0, 0});
            failures.push_back(Json{{"at_ns", f.atNs}, {"api", f.api}, {"bytes", f.bytes}, {"error", f.error},
                                    {"callsite", site["callsite"]}, {"label", site["label"]}, {"in_use_bytes", f.inUse},
                                    {"pool_unused_min_bytes", f.poolUnusedMin}, {"holders", holders}});
        }
        for (const auto& [ns, bytes] : m.series) series.push_back(Json::array({ns, bytes}));
        Json pools = Json::array(), held = Json::array();
        for (const MemoryPoolRow& p : m.pools)
            pools.push_back(Json{{"pool", p.pool}, {"release_threshold_bytes", p.releaseThreshold},
                                 {"release_threshold_set", p.thresholdSet}, {"allocations", p.allocations},
                                 {"peak_used_bytes", p.peakUsedBytes}, {"used_end_bytes", p.usedEndBytes},
                                 {"peak_reserved_min_bytes", p.peakReservedMinBytes},
                                 {"reserved_min_end_bytes", p.reservedMinEndBytes},
                                 {"unused_min_end_bytes", p.unusedMinEndBytes()}, {"grows", p.grows},
                                 {"regrows", p.regrows}, {"regrow_bytes", p.regrowBytes},
                                 {"releases_at_sync", p.releasesAtSync}, {"trims", p.trims},
                                 {"released_bytes", p.releasedBytes}, {"grow_host_ns", p.growHostNs},
                                 {"served", p.served}, {"served_host_ns", p.servedHostNs}, {"destroyed", p.destroyed},
                                 {"regrow_callsites", ids(p.regrowSites)}});
        for (const auto& [ns, bytes] : m.heldSeries) held.push_back(Json::array({ns, bytes}));
        memory.push_back(Json{{"pid", m.pid}, {"device", m.device}, {"space", m.space}, {"allocations", m.allocations},
                              {"releases", m.releases}, {"failed", m.failed}, {"allocated_bytes", m.allocatedBytes},
                              {"peak_bytes", m.peakBytes}, {"peak_at_ns", m.peakNs}, {"peak_until_ns", m.peakUntilNs}, {"in_use_end_bytes", m.inUseEndBytes},
                              {"unknown_releases", m.unknownReleases}, {"untracked", m.untracked}, {"attached", m.attached}, {"at_peak", atPeak},
                              {"live_at_end", live}, {"failures", failures}, {"series", series}, {"pools", pools},
                              {"held_series", held}, {"peak_held_min_bytes", m.peakHeldMinBytes},
                              {"peak_held_at_ns", m.peakHeldNs}, {"vmm_reserved_peak_bytes", m.vmmReservedPeakBytes},
                              {"vmm_reserved_end_bytes", m.vmmReservedEndBytes}});
    }

    Json& sites = j["callsites"] = Json::array();
    for (const CallSite& s : r.callsites) {
        Json frames = Json::array();
        for (const ReportFrame& f : s.frames)
            frames.push_back(Json{{"function", f.function}, {"file", f.file}, {"line", f.line}, {"module", f.module},
                                  {"offset", f.offset}, {"address", f.address}, {"inlined", f.inlined}, {"app", f.app}});
        sites.push_back(Json{{"id", s.id}, {"category", s.category}, {"frames", frames}, {"count", s.count},
                             {"ns", s.ns}, {"label", s.label}, {"site_frame", s.siteFrame}, {"apis", strings(s.apis)},
                             {"library_call", s.libraryCall}, {"library_own", s.libraryOwn}});
    }

    Json& findings = j["findings"] = Json::array();
    for (const Finding& f : r.findings) {
        Json evidence = Json::object();
        for (const auto& [k, v] : f.evidence) evidence[k] = v;
        Json row{{"rule", f.rule}, {"severity", f.severity}, {"message", f.message}, {"count", f.count},
                 {"ns", f.ns}, {"estimated_savings_ns", f.estimatedSavingsNs},
                 {"estimated_savings_bound", f.savingsBound},
                 {"callsites", ids(f.callsites)}, {"evidence", evidence},
                 {"host_cpu_savings_ns", f.hostCpuSavingsNs}, {"overlaps", strings(f.overlaps)}};
        const FindingPrediction& p = f.prediction;
        if (!p.fix.empty())
            row["prediction"] = Json{{"basis", "replay"}, {"fix", p.fix}, {"saving_ns", p.savingNs},
                                     {"low_ns", p.lowNs}, {"high_ns", p.highNs}, {"formula_saving_ns", p.formulaNs},
                                     {"formula_bound", p.formulaBound}, {"wall_ns", p.wallNs},
                                     {"fixed_wall_ns", p.fixedWallNs}, {"calls_changed", p.changed},
                                     {"calls_kept", p.kept}, {"kept_because", p.keptWhy},
                                     {"replay_error_pct", p.replayErrorPct}, {"processes", p.processes},
                                     {"costs", strings(p.costs)}};
        if (!p.fix.empty() && p.windowCalls)
            row["prediction"]["window"] = Json{{"extrapolated", true},
                                               {"calls", p.windowCalls},
                                               {"process_calls", p.processCalls},
                                               {"finding_calls_in_window", p.findingWindowCalls},
                                               {"finding_calls", p.findingCalls},
                                               {"finding_ns_in_window", p.findingWindowNs},
                                               {"finding_ns", p.findingNs}};
        findings.push_back(std::move(row));
    }

    Json& paths = j["critical_path"] = Json::array();
    for (const CriticalPath& cp : r.criticalPaths) {
        Json parts = Json::array(), off = Json::array();
        for (const CriticalPathPart& p : cp.parts) {
            Json part{{"kind", p.kind}, {"what", p.what}, {"ns", p.ns}, {"tid", p.tid}};
            if (p.kind != "host") {
                char h[24];
                std::snprintf(h, sizeof h, "0x%llx", static_cast<unsigned long long>(p.stream));
                part["device"] = p.device;
                part["stream"] = h;
                part["per_thread"] = p.perThread;
            }
            parts.push_back(std::move(part));
        }
        for (const OffPathThread& t : cp.offPath)
            off.push_back(Json{{"tid", t.tid}, {"thread", t.thread}, {"end_ns", t.endNs}, {"cuda_ns", t.cudaNs}});
        paths.push_back(Json{{"pid", cp.pid}, {"wall_ns", cp.wallNs}, {"replay_error_pct", cp.replayErrorPct},
                             {"parts", parts}, {"off_path", off}});
    }
    j["findings_savings_ns"] = combinedSavingsNs(r.findings);
    return j;
}

std::string renderJson(const Report& r)
{
    // Invalid UTF-8 in a kernel name or path must not make the whole report fail.
    return reportJson(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace gpuspy::collect
