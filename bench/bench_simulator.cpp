// Simulator and search speed: the 80,910-candidate search target, the search over every schedule, and how time grows.
//
// Run: build-sim/bench/bench_simulator --benchmark_counters_tabular=true
// Target (docs/performance.md): 32 layers on 4 devices, GPipe, all 4,495 balances x chunks
// {1,2,4,8,16,32} x 3 modes (80,910 candidates) in under 2 s on one core. The search over
// every schedule (gpipe, 1f1b, zb1p, interleaved v2, interleaved-zb v2, zbv; chunks 1..32) is measured beside it, and
// the GPipe search on a cluster whose devices name two hosts (shared links).
#include <pipeprof/core/step_breakdown.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include "candidate_simulator.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using pipeprof::Bytes;
using pipeprof::TimeNs;

/// A deterministic profile of `layers` layers with uneven costs (a transformer-ish mix).
pipeprof::Profile benchProfile(std::int64_t layers) {
  pipeprof::Profile profile;
  profile.environment.model = "bench";
  for (std::int64_t l = 0; l < layers; ++l) {
    pipeprof::LayerProfile layer;
    layer.name = "layer" + std::to_string(l);
    layer.paramBytes = (1 + l % 5) * (Bytes{1} << 20);
    layer.gradBytes = layer.paramBytes;
    for (std::int64_t size : {1, 8, 32}) {
      pipeprof::CostSample cost;
      cost.microBatch = size;
      cost.forwardNs = size * (20'000 + 7'000 * (l % 7)) + 5'000;
      cost.backwardNs = 2 * cost.forwardNs;
      cost.outputBytes = size * (256 << 10);
      cost.savedBytes = size * ((1 + l % 3) << 20);
      cost.forwardWorkspaceBytes = size * (32 << 10);
      cost.backwardWorkspaceBytes = size * (64 << 10);
      // I and W of zero bubble: the input's gradient a little dearer than the weights', W
      // keeping the layer's input (a quarter of what it saves).
      cost.backwardSplit = pipeprof::BackwardSplit{cost.forwardNs + cost.forwardNs / 10,
                                                   cost.forwardNs - cost.forwardNs / 10, cost.savedBytes / 4};
      layer.costs.push_back(cost);
    }
    profile.layers.push_back(layer);
  }
  return profile;
}

pipeprof::Cluster benchCluster(std::int64_t devices) {
  return pipeprof::Cluster::uniform(devices, Bytes{16} << 30, 25e9, 5'000, "gpu");
}

/// Four devices, two per host: the bench link within a host, 12.5 GB/s and 20 us between them.
pipeprof::Cluster twoHostCluster() {
  return pipeprof::Cluster::withHosts({"node0", "node0", "node1", "node1"}, Bytes{16} << 30,
                                      pipeprof::Link{5'000, 25e9}, pipeprof::Link{20'000, 12.5e9}, "gpu");
}

/// Runs the search once per iteration and reports candidates (decided per search), simulated
/// (candidates simulated, i.e. not rejected for their shape) and rates.
void runSearch(benchmark::State& state, const pipeprof::SearchSpace& space,
               const pipeprof::Cluster& cluster = benchCluster(4)) {
  const pipeprof::Profile profile = benchProfile(32);
  std::int64_t candidates = 0;
  std::int64_t shapeRejected = 0;
  std::int64_t events = 0;
  for (auto _ : state) {
    const pipeprof::SearchResult result = pipeprof::search(profile, cluster, space);
    candidates += result.evaluated;
    events += result.simulatedEvents;
    for (const pipeprof::RankedCandidate& rejected : result.rejected) {
      if (rejected.prediction.peakBytes.empty()) ++shapeRejected;
    }
    benchmark::DoNotOptimize(result.ranked.data());
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["candidates"] = benchmark::Counter(static_cast<double>(candidates) / iterations);
  state.counters["simulated"] = benchmark::Counter(static_cast<double>(candidates - shapeRejected) / iterations);
  state.counters["candidates/s"] = benchmark::Counter(static_cast<double>(candidates), benchmark::Counter::kIsRate);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

pipeprof::SearchSpace allBalancesSpace() {
  pipeprof::SearchSpace space;
  space.batch = 32;
  space.devices = 4;
  space.schedules = {pipeprof::ScheduleKind::GPipe};
  space.chunks = {1, 2, 4, 8, 16, 32};
  space.enumeration = pipeprof::BalanceEnumeration::All;
  return space;
}

/// The speed target: an exhaustive GPipe search of 80,910 candidates.
void BM_SearchAllBalances32Layers4Devices(benchmark::State& state) { runSearch(state, allBalancesSpace()); }
BENCHMARK(BM_SearchAllBalances32Layers4Devices)->Unit(benchmark::kMillisecond)->Iterations(3);

/// The same search on two hosts of two devices: copies drain on shared links.
void BM_SearchAllBalances32Layers4DevicesTwoHosts(benchmark::State& state) {
  runSearch(state, allBalancesSpace(), twoHostCluster());
}
BENCHMARK(BM_SearchAllBalances32Layers4DevicesTwoHosts)->Unit(benchmark::kMillisecond)->Iterations(3);

/// Every schedule: gpipe, 1f1b and zb1p over all 4,495 balances of 4 stages, interleaved v2,
/// interleaved-zb v2 and zbv over the Auto neighbourhood of 8 stages (C(31,7) is too many),
/// chunks 1..32, 3 modes. (Before zero bubble: gpipe, 1f1b and interleaved only, 9 s.)
pipeprof::SearchSpace everyScheduleSpace(std::vector<pipeprof::ScheduleKind> schedules) {
  pipeprof::SearchSpace space;
  space.batch = 32;
  space.devices = 4;
  space.schedules = std::move(schedules);
  space.stagesPerDevice = {1, 2};
  space.chunks.clear();
  for (std::int64_t chunks = 1; chunks <= 32; ++chunks) space.chunks.push_back(chunks);
  space.enumeration = pipeprof::BalanceEnumeration::Auto;
  return space;
}

void BM_SearchEverySchedule32Layers4Devices(benchmark::State& state) {
  runSearch(state, everyScheduleSpace({std::begin(pipeprof::kScheduleKinds), std::end(pipeprof::kScheduleKinds)}));
}
BENCHMARK(BM_SearchEverySchedule32Layers4Devices)->Unit(benchmark::kMillisecond)->Iterations(1);

/// The same without the zero-bubble families: the search as it was before them, for the ratio.
void BM_SearchEveryScheduleButZeroBubble32Layers4Devices(benchmark::State& state) {
  runSearch(state, everyScheduleSpace({pipeprof::ScheduleKind::GPipe, pipeprof::ScheduleKind::OneFOneB,
                                       pipeprof::ScheduleKind::Interleaved}));
}
BENCHMARK(BM_SearchEveryScheduleButZeroBubble32Layers4Devices)->Unit(benchmark::kMillisecond)->Iterations(1);

/// One candidate with warm caches (what each search step costs): args layers, devices, chunks.
void BM_SimulateCandidate(benchmark::State& state) {
  const std::int64_t layers = state.range(0);
  const std::int64_t devices = state.range(1);
  const std::int64_t chunks = state.range(2);
  const pipeprof::Profile profile = benchProfile(layers);
  const pipeprof::Cluster cluster = benchCluster(devices);
  pipeprof::Candidate candidate;
  candidate.balance.assign(static_cast<std::size_t>(devices), layers / devices);
  candidate.balance.back() += layers % devices;
  candidate.chunks = chunks;
  candidate.batch = chunks;
  candidate.checkpoint = pipeprof::Checkpoint::ExceptLast;
  pipeprof::sim::CandidateSimulator simulator(profile, cluster);
  pipeprof::SimulationResult result;
  std::int64_t events = 0;
  for (auto _ : state) {
    simulator.simulate(candidate, true, false, /*latePeaks=*/false, result);
    events += result.eventCount;
    benchmark::DoNotOptimize(result.prediction.iterationNs);
  }
  state.counters["events"] = benchmark::Counter(static_cast<double>(result.eventCount));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["candidates/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateCandidate)
    ->ArgNames({"layers", "devices", "chunks"})
    ->Args({8, 4, 8})
    ->Args({16, 4, 8})
    ->Args({32, 4, 8})
    ->Args({64, 4, 8})
    ->Args({128, 4, 8})
    ->Args({32, 2, 8})
    ->Args({32, 8, 8})
    ->Args({32, 16, 8})
    ->Args({32, 4, 1})
    ->Args({32, 4, 4})
    ->Args({32, 4, 16})
    ->Args({32, 4, 32})
    ->Args({32, 4, 64})
    ->Unit(benchmark::kMicrosecond);

/// The public simulate() (validates, builds and compiles the schedule every call), with a trace.
/// 32 layers in 4 stages of 8, batch 32.
pipeprof::Candidate fourStagesOfEight(std::int64_t chunks, pipeprof::ScheduleKind schedule) {
  pipeprof::Candidate candidate;
  candidate.balance = {8, 8, 8, 8};
  candidate.chunks = chunks;
  candidate.batch = 32;
  candidate.schedule = schedule;
  return candidate;
}

void BM_SimulatePublicWithTrace(benchmark::State& state) {
  const pipeprof::Profile profile = benchProfile(32);
  const pipeprof::Cluster cluster = benchCluster(4);
  const pipeprof::Candidate candidate = fourStagesOfEight(state.range(0), pipeprof::ScheduleKind::GPipe);
  pipeprof::SimulationOptions options;
  options.recordTrace = true;
  for (auto _ : state) {
    const pipeprof::SimulationResult result = pipeprof::simulate(profile, cluster, candidate, options);
    benchmark::DoNotOptimize(result.trace.events.data());
  }
}
BENCHMARK(BM_SimulatePublicWithTrace)->ArgName("chunks")->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);

/// The step breakdown of one predicted step (what a sweep adds per measured candidate, twice:
/// its measured trace holds a few steps of the same ops).
void BM_BreakDownSteps(benchmark::State& state) {
  const pipeprof::Profile profile = benchProfile(32);
  const pipeprof::Cluster cluster = benchCluster(4);
  const pipeprof::Candidate candidate = fourStagesOfEight(state.range(0), pipeprof::ScheduleKind::OneFOneB);
  pipeprof::SimulationOptions options;
  options.recordTrace = true;
  const pipeprof::SimulationResult result = pipeprof::simulate(profile, cluster, candidate, options);
  const pipeprof::Schedule schedule = pipeprof::Schedule::build(candidate.scheduleSpec({}));
  for (auto _ : state) {
    const pipeprof::StepBreakdown breakdown = pipeprof::breakDownSteps(schedule, result.trace);
    benchmark::DoNotOptimize(breakdown.devices.data());
  }
  state.counters["events"] = static_cast<double>(result.trace.events.size());
}
BENCHMARK(BM_BreakDownSteps)->ArgName("chunks")->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
