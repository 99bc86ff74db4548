// What writing a sweep's report costs: the README's sweep predicts 12,516 candidates and a sweep
// writes its report again and again while it measures (tuner/src/measuring_rounds.cpp), so the
// sweep's main thread spends that long per write between rounds.
//
// Run: build/bench/bench_report
// Figures and the command: docs/performance.md, "Writing the report while measuring".
#include <pipeprof/core/report.h>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

/// A report shaped like the README sweep's: `candidates` predicted on two devices, the first
/// 12 measured (8 rounds of 15 steps), every prediction kept before and after the drift.
pipeprof::Report sweepLikeReport(std::int64_t candidates) {
  pipeprof::Report report;
  report.environment.model = "mlp";
  report.environment.batch = 128;
  report.environment.devices = {"cpu", "cpu"};
  for (std::int64_t index = 0; index < candidates; ++index) {
    pipeprof::CandidateResult result;
    result.candidate.balance = {1 + index % 14, 14 - index % 14};
    result.candidate.chunks = std::int64_t{1} << (index % 4);
    result.candidate.batch = 128;
    pipeprof::Prediction& prediction = result.prediction;
    prediction.iterationNs = 12'000'000 + index * 997;
    prediction.samplesPerS = 128e9 / static_cast<double>(prediction.iterationNs);
    prediction.bubbleFraction = 0.1 + static_cast<double>(index % 17) / 100.0;
    prediction.busyNs = {prediction.iterationNs * 8 / 10, prediction.iterationNs * 7 / 10};
    prediction.peakBytes = {40'000'000 + index, 38'000'000 + index};
    prediction.peakOp = {"backward(3,0)", "forward(7,1)"};
    result.predictionBeforeDrift = prediction;
    result.predictedRank = index + 1;
    if (index < 12) {
      pipeprof::Measurement measurement;
      for (std::int64_t round = 0; round < 8; ++round) {
        std::vector<pipeprof::TimeNs> steps;
        for (std::int64_t step = 0; step < 15; ++step) steps.push_back(12'500'000 + (step * 7919 + round) % 400'000);
        measurement.addRound(steps, {41'000'000, 39'000'000}, 128, static_cast<double>(round) * 3.0);
      }
      result.measurement = measurement;
      result.status = pipeprof::CandidateStatus::Measured;
    } else {
      result.notMeasuredReason = "not in top 12";
    }
    report.candidates.push_back(std::move(result));
  }
  return report;
}

/// writeReport: the report to JSON, dumped, written to a temporary file and renamed.
void BM_WriteReport(benchmark::State& state) {
  const pipeprof::Report report = sweepLikeReport(state.range(0));
  const std::string path = "/tmp/pipeprof-bench-report." + std::to_string(::getpid()) + ".json";
  for (auto _ : state) pipeprof::writeReport(report, path);
  std::remove(path.c_str());
}
BENCHMARK(BM_WriteReport)
    ->ArgName("candidates")
    ->Arg(876)
    ->Arg(12516)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();

/// The JSON tree alone, without dumping it.
void BM_ReportToJson(benchmark::State& state) {
  const pipeprof::Report report = sweepLikeReport(state.range(0));
  for (auto _ : state) {
    const nlohmann::json json = pipeprof::toJson(report);
    benchmark::DoNotOptimize(json.size());
  }
}
BENCHMARK(BM_ReportToJson)->ArgName("candidates")->Arg(12516)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The tree's text alone: dump() without indent (-1) and with the report's indent of 2.
void BM_DumpReportJson(benchmark::State& state) {
  const nlohmann::json json = pipeprof::toJson(sweepLikeReport(12516));
  for (auto _ : state) {
    const std::string text = json.dump(static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(text.size());
  }
}
BENCHMARK(BM_DumpReportJson)->ArgName("indent")->Arg(-1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

/// readReport: what a GUI watching the sweep (docs/gui.md) spends on each write it reloads, the
/// file parsed and the report rebuilt from it.
void BM_ReadReport(benchmark::State& state) {
  const std::string path = "/tmp/pipeprof-bench-report-read." + std::to_string(::getpid()) + ".json";
  pipeprof::writeReport(sweepLikeReport(state.range(0)), path);
  for (auto _ : state) {
    const pipeprof::Report report = pipeprof::readReport(path);
    benchmark::DoNotOptimize(report.candidates.size());
  }
  std::remove(path.c_str());
}
BENCHMARK(BM_ReadReport)->ArgName("candidates")->Arg(876)->Arg(12516)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
