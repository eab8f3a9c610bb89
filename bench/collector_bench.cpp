// bench/collector_bench.cpp: the collector's ingest rate on one core: a synthetic stream (see
// synth_stream.h) decoded by the wire codec alone; ingested by StreamIngest the way `gpuspy report`
// reads a file (neither validated bytes nor events kept: the events go to an observer) and the way
// `gpuspy collect` takes a connection (validated bytes and events kept); and ingested with the
// report's streaming analysis (StreamAnalyzer) attached, which is what `gpuspy report` costs.
#include "bench/synth_stream.h"
#include "collector/analyze/analyze.h"
#include "collector/ingest/ingest.h"
#include "wire/codec.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>

namespace {

using namespace gpuspy;

constexpr size_t kChunk = 256 << 10;  // what one read() of a socket or file hands over

const std::vector<uint8_t>& stream(int64_t records)
{
    static std::map<int64_t, std::vector<uint8_t>> cache;
    auto it = cache.find(records);
    if (it == cache.end()) it = cache.emplace(records, bench::SynthStream::make(uint64_t(records))).first;
    return it->second;
}

void BM_Decode(benchmark::State& state)
{
    const std::vector<uint8_t>& s = stream(state.range(0));
    uint64_t records = 0;
    for (auto _ : state) {
        wire::StreamDecoder d;
        uint64_t calls = 0;
        for (size_t at = 0; at < s.size(); at += kChunk)
            d.feed(s.data() + at, std::min(kChunk, s.size() - at),
                   [&](const wire::RecordView& v) { calls += v.type == wire::RecordType::Call; });
        d.finish();
        benchmark::DoNotOptimize(calls);
        records = d.records();
    }
    state.SetItemsProcessed(int64_t(records) * state.iterations());
    state.SetBytesProcessed(int64_t(s.size()) * state.iterations());
    state.counters["bytes_per_record"] = double(s.size()) / double(records);
}
BENCHMARK(BM_Decode)->Arg(1000000)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_Ingest(benchmark::State& state)
{
    const std::vector<uint8_t>& s = stream(state.range(0));
    const bool keepRaw = state.range(1) != 0;  // as `collect` does; else as `report` reads
    uint64_t records = 0, observed = 0;
    std::vector<uint8_t> taken;
    for (auto _ : state) {
        collect::StreamIngest in;
        in.setKeepRaw(keepRaw);
        in.setKeepEvents(keepRaw);
        if (!keepRaw) in.setObserver([&](const collect::Process&, const wire::RecordView&) { ++observed; });
        for (size_t at = 0; at < s.size(); at += kChunk) {
            in.feed(s.data() + at, std::min(kChunk, s.size() - at));
            if (keepRaw) {
                taken.clear();
                in.takeValidated(taken);
            }
        }
        if (!in.finish()) state.SkipWithError(in.error().c_str());
        records = in.records();
        benchmark::DoNotOptimize(in.process().calls.data());
        benchmark::DoNotOptimize(observed);
    }
    state.SetItemsProcessed(int64_t(records) * state.iterations());
    state.SetBytesProcessed(int64_t(s.size()) * state.iterations());
}

void BM_IngestAnalyze(benchmark::State& state)
{
    const std::vector<uint8_t>& s = stream(state.range(0));
    uint64_t records = 0;
    for (auto _ : state) {
        collect::StreamAnalyzer analyzer(collect::ReportOptions{});
        collect::StreamIngest in;
        in.setKeepRaw(false);
        in.setKeepEvents(false);
        in.setObserver([&](const collect::Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); });
        for (size_t at = 0; at < s.size(); at += kChunk) in.feed(s.data() + at, std::min(kChunk, s.size() - at));
        if (!in.finish()) state.SkipWithError(in.error().c_str());
        analyzer.onProcess(in.process());
        records = in.records();
        benchmark::DoNotOptimize(analyzer.finish(0));
    }
    state.SetItemsProcessed(int64_t(records) * state.iterations());
}
BENCHMARK(BM_IngestAnalyze)->Arg(1000000)->ArgNames({"records"})->Unit(benchmark::kMillisecond)->Repetitions(3)->ReportAggregatesOnly(true);
BENCHMARK(BM_Ingest)
    ->Args({1000000, 0})
    ->Args({1000000, 1})
    ->ArgNames({"records", "keep_raw"})
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
