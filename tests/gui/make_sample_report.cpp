// Writes the GUI tests' sample report (tests/gui/data): a small synthetic sweep with traces.
//
// Usage: gui_make_sample <output-dir>. The profile, cluster and "measurements" are made up
// (measured = predicted with a fixed, per-candidate skew) so the files are small and stable;
// predictions and predicted traces come from the real simulator.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/step_breakdown.h>
#include <pipeprof/simulator/simulator.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

using namespace pipeprof;

Profile makeProfile() {
  Profile profile;
  profile.environment = {"mlp", "cpu", "synthetic CPU", 1, "1.13.1", pipeprof::Precision::Fp32, {}, {}};
  profile.inputBytesPerSample = 4096;
  const char* names[] = {"fc0", "relu0", "fc1", "relu1", "fc2", "relu2", "fc3", "head"};
  const double weight[] = {1.0, 0.15, 1.6, 0.15, 1.6, 0.15, 1.2, 0.5};
  for (int l = 0; l < 8; ++l) {
    LayerProfile layer;
    layer.name = names[l];
    const bool dense = l % 2 == 0 || l == 7;
    layer.paramBytes = dense ? static_cast<Bytes>(weight[l] * 8 * 1024 * 1024) : 0;
    layer.gradBytes = layer.paramBytes;
    if (dense) {
      // Every optimizer kind's step, as `pipeprof profile` measures them, so the tuning panel
      // can predict each (SGD's costs nothing here: the sample's predictions have no step).
      const auto ns = [&](double us) { return static_cast<TimeNs>(weight[l] * us * 1000); };
      layer.optimizerSteps = {{OptimizerKind::Sgd, {0, 0}},
                              {OptimizerKind::Momentum, {ns(30), 0}},
                              {OptimizerKind::Adam, {ns(120), layer.paramBytes}},
                              {OptimizerKind::AdamW, {ns(130), layer.paramBytes}}};
    }
    for (std::int64_t mb : {1, 16}) {
      CostSample cost;
      cost.microBatch = mb;
      cost.forwardNs = static_cast<TimeNs>(weight[l] * (40'000 + 30'000 * mb));
      cost.backwardNs = 2 * cost.forwardNs;
      cost.outputBytes = 16 * 1024 * mb;
      cost.savedBytes = static_cast<Bytes>(weight[l] * 256 * 1024 * mb);
      cost.forwardWorkspaceBytes = 32 * 1024 * mb;
      cost.backwardWorkspaceBytes = 64 * 1024 * mb;
      layer.costs.push_back(cost);
    }
    profile.layers.push_back(layer);
  }
  return profile;
}

// Measured = predicted scaled by skew, with a host-clock offset and memory counters kept.
Trace measuredTrace(const Trace& predicted, double skew) {
  Trace trace = predicted;
  trace.metadata["source"] = "measured";
  int k = 0;
  for (TraceEvent& event : trace.events) {
    // Ops run a little shorter or longer than predicted, never overlapping the next one.
    const double jitter = 0.9 + 0.08 * std::sin(0.7 * k++);
    event.startNs = static_cast<TimeNs>(std::llround(static_cast<double>(event.startNs) * skew));
    event.durationNs = static_cast<TimeNs>(std::llround(static_cast<double>(event.durationNs) * skew * jitter));
    if (event.kind == EventKind::Counter) event.value *= 1.04;
  }
  return trace;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gui_make_sample <output-dir>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir / "sample");

  Report report;
  report.environment = {
      "mlp", 32, {"cpu", "cpu"}, 1, "1.13.1", "sample", "2026-11-22T00:00:00Z", pipeprof::Precision::Fp32, {}, ""};
  report.profile = makeProfile();
  report.cluster = Cluster::uniform(2, Bytes{112} * 1024 * 1024, 10e9, 5'000, "cpu");
  report.complete = true;

  struct Spec {
    std::vector<std::int64_t> balance;
    std::int64_t chunks;
    Checkpoint mode;
    double skew;  // measured / predicted step time; 0 = not measured; < 0 = failed
    bool traces;
    ScheduleKind schedule = ScheduleKind::GPipe;
    std::int64_t stagesPerDevice = 1;
  };
  const Spec specs[] = {
      {{4, 4}, 4, Checkpoint::ExceptLast, 1.06, true},
      {{3, 5}, 4, Checkpoint::ExceptLast, 1.04, true},
      {{4, 4}, 8, Checkpoint::ExceptLast, 1.12, false},
      {{5, 3}, 4, Checkpoint::Never, 0.95, true},
      {{4, 4}, 2, Checkpoint::Always, 1.09, false},
      {{2, 6}, 4, Checkpoint::ExceptLast, -1, false},
      {{4, 4}, 1, Checkpoint::Never, 0, false},
      {{6, 2}, 8, Checkpoint::Always, 0, false},
      {{7, 1}, 2, Checkpoint::Never, 0, false},
      // Another schedule family: 1f1b, measured. (Interleaved candidates are appended in
      // memory by sample.h's withInterleaved(): core's report reader still expects the
      // per-device lists to have one entry per stage.)
      {{4, 4}, 4, Checkpoint::ExceptLast, 1.05, false, ScheduleKind::OneFOneB, 1},
  };
  int index = 0;
  for (const Spec& spec : specs) {
    CandidateResult result;
    result.candidate.balance = spec.balance;
    result.candidate.chunks = spec.chunks;
    result.candidate.checkpoint = spec.mode;
    result.candidate.batch = 32;
    result.candidate.schedule = spec.schedule;
    result.candidate.stagesPerDevice = spec.stagesPerDevice;
    SimulationOptions options;
    options.recordTrace = true;
    SimulationResult simulated = simulate(*report.profile, *report.cluster, result.candidate, options);
    result.prediction = simulated.prediction;
    const std::string stem = "sample/c" + std::to_string(index);
    if (spec.traces) {
      result.prediction.tracePath = stem + "-predicted.json";
      writeChromeTraceFile(simulated.trace, (dir / result.prediction.tracePath).string());
    }
    if (spec.skew > 0) {
      Measurement m;
      m.warmupSteps = 2;
      const auto median = static_cast<TimeNs>(std::llround(result.prediction.iterationNs * spec.skew));
      m.stepNs = {median + 20'000, median, median - 15'000, median + 5'000, median - 3'000};
      m.stepNsMedian = median;
      m.stepNsMin = median - 15'000;
      m.stepNsMax = median + 20'000;
      m.samplesPerS = 32.0 / (static_cast<double>(median) / 1e9);
      for (Bytes peak : result.prediction.peakBytes)
        m.peakBytes.push_back(static_cast<Bytes>(peak * (0.9 + 0.05 * index)));
      if (spec.traces) {
        m.tracePath = stem + "-measured.json";
        const Trace measured = measuredTrace(simulated.trace, spec.skew);
        writeChromeTraceFile(measured, (dir / m.tracePath).string());
        const Schedule schedule = Schedule::build(result.candidate.scheduleSpec({}));
        result.predictedBreakdown = breakDownSteps(schedule, simulated.trace);
        result.measuredBreakdown = breakDownSteps(schedule, measured);
      }
      result.measurement = m;
      result.status = CandidateStatus::Measured;
    } else if (spec.skew < 0) {
      result.status = CandidateStatus::Failed;
      result.error = "partition 1, micro-batch 2: out of memory (synthetic failure for the GUI tests)";
    } else {
      result.notMeasuredReason = result.prediction.fits ? "not in the top 6" : "predicted not to fit";
    }
    report.candidates.push_back(result);
    ++index;
  }
  // Predicted rank: by predicted throughput among the candidates that fit.
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < report.candidates.size(); ++c) {
    if (report.candidates[c].prediction.fits) order.push_back(c);
  }
  std::sort(order.begin(), order.end(), [&report](std::size_t a, std::size_t b) {
    return report.candidates[a].prediction.samplesPerS > report.candidates[b].prediction.samplesPerS;
  });
  for (std::size_t r = 0; r < order.size(); ++r)
    report.candidates[order[r]].predictedRank = static_cast<std::int64_t>(r + 1);
  report.updateSuggestion();
  writeReport(report, (dir / "sample_report.json").string());
  std::cout << "wrote " << (dir / "sample_report.json").string() << " with " << report.candidates.size()
            << " candidates\n";
  return 0;
}
