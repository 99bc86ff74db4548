// The sweep's calibration runs: reference pipelines measured once per sweep.
#include "sweep_calibration.h"

#include "training_loop.h"

#include <algorithm>
#include <chrono>

namespace pipeprof::cli {

std::vector<std::int64_t> evenBalance(std::int64_t layers, std::int64_t partitions) {
  std::vector<std::int64_t> balance(static_cast<std::size_t>(partitions), layers / partitions);
  for (std::int64_t j = 0; j < layers % partitions; ++j) ++balance[static_cast<std::size_t>(j)];
  return balance;
}

Candidate referenceCandidate(std::int64_t layers, std::int64_t devices, std::int64_t chunks, std::int64_t batch) {
  Candidate candidate;
  candidate.balance = evenBalance(layers, std::min(devices, layers));
  candidate.chunks = chunks;
  candidate.checkpoint = Checkpoint::Never;
  candidate.batch = batch;
  return candidate;
}

TrainingResult trainReference(const ModelFlags& flags, const Candidate& reference,
                              const std::vector<torch::Device>& devices, std::int64_t warmupSteps, std::int64_t steps,
                              bool traced, std::function<bool()> shouldStop) {
  Model model = buildModelFromFlags(flags);
  TrainingOptions options;
  options.balance = reference.balance;
  options.devices.assign(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(reference.balance.size()));
  options.chunks = reference.chunks;
  options.checkpoint = reference.checkpoint;
  options.batch = reference.batch;
  options.warmupSteps = warmupSteps;
  options.steps = steps;
  options.captureTrace = traced;
  options.shouldStop = std::move(shouldStop);
  return trainAndMeasure(model, options);
}

ChainedCalibration measureChainedCalibration(const ModelFlags& flags, const Profile& profile, const Cluster& cluster,
                                             std::int64_t batch, const std::vector<std::int64_t>& chunks,
                                             const std::vector<torch::Device>& devices,
                                             const CalibrationRounds& rounds) {
  const auto deviceCount = static_cast<std::int64_t>(devices.size());
  std::vector<ReferenceRun> runs;
  const auto start = std::chrono::steady_clock::now();
  auto budgetLeft = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < rounds.budgetSeconds;
  };
  for (std::int64_t round = 0; round < rounds.minRounds || budgetLeft(); ++round) {
    for (const std::int64_t m : chunks) {
      if (m < 1 || m > batch) continue;
      ReferenceRun run;
      run.candidate = referenceCandidate(profile.layerCount(), deviceCount, m, batch);
      run.trace = trainReference(flags, run.candidate, devices, rounds.warmupSteps, rounds.steps, true, {}).trace;
      runs.push_back(std::move(run));
    }
  }
  return chainedCalibrationFromRuns(profile, cluster, runs);
}

void addStepOverhead(Prediction& prediction, TimeNs overheadNs, std::int64_t batch) {
  prediction.iterationNs += overheadNs;
  prediction.samplesPerS = prediction.iterationNs > 0
                               ? static_cast<double>(batch) * 1e9 / static_cast<double>(prediction.iterationNs)
                               : 0.0;
}

void appendStepOverheadSpan(Trace& trace, TimeNs overheadNs) {
  TimeNs endNs = 0;
  for (const TraceEvent& event : trace.events) endNs = std::max(endNs, event.endNs());
  TraceEvent span;
  span.kind = EventKind::Span;
  span.name = "calibration (step overhead)";
  span.device = "host";
  span.lane = "host";
  span.startNs = endNs;
  span.durationNs = overheadNs;
  span.phase = Phase::Optimizer;
  span.args["source"] = "measured once per sweep per chunk count: grad zeroing, loss, SGD step, waking the workers";
  trace.events.push_back(span);
}

}  // namespace pipeprof::cli
