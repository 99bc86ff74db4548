// The sweep's two documented calibrations of the simulator's inputs, measured once per sweep.
#include "sweep_calibration.h"

#include "training_loop.h"

#include <pipeprof/simulator/simulator.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

namespace pipeprof::cli {

namespace {

/// Median time of `repeats` forward + backward passes of the model on its own thread(s).
std::vector<TimeNs> timePasses(Model& model, const Batch& data, std::int64_t repeats) {
  std::vector<TimeNs> samples;
  for (std::int64_t r = 0; r < repeats + 2; ++r) {
    const auto start = std::chrono::steady_clock::now();
    model.loss(model.sequential->forward(data.input), data.target).backward();
    const auto end = std::chrono::steady_clock::now();
    if (r >= 2) samples.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
  }
  return samples;
}

TimeNs median(std::vector<TimeNs> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

double measureContentionFactor(const ModelFlags& flags, std::int64_t batch, std::int64_t partitions,
                               std::int64_t repeats) {
  if (partitions < 2) return 1.0;
  std::vector<Model> models;
  std::vector<Batch> batches;
  for (std::int64_t j = 0; j < partitions; ++j) {
    models.push_back(buildModelFromFlags(flags));
    batches.push_back(models.back().makeBatch(batch, j));
  }
  // Alternate alone and together rounds so a change in the machine's load hits both sides.
  std::vector<TimeNs> alone;
  std::vector<TimeNs> all;
  for (int round = 0; round < 5; ++round) {
    const std::vector<TimeNs> single = timePasses(models.front(), batches.front(), repeats);
    alone.insert(alone.end(), single.begin(), single.end());
    std::vector<std::vector<TimeNs>> together(static_cast<std::size_t>(partitions));
    std::vector<std::thread> threads;
    for (std::size_t j = 0; j < together.size(); ++j) {
      threads.emplace_back([&, j] { together[j] = timePasses(models[j], batches[j], repeats); });
    }
    for (std::thread& thread : threads) thread.join();
    for (const auto& samples : together) all.insert(all.end(), samples.begin(), samples.end());
  }
  const TimeNs aloneNs = median(alone);
  if (aloneNs <= 0) return 1.0;
  const double factor = static_cast<double>(median(all)) / static_cast<double>(aloneNs);
  return std::clamp(factor, 1.0, static_cast<double>(partitions));
}

TimeNs concurrentComputeNs(const Trace& trace) {
  // +1 at a compute span's start and -1 at its end, per partition; count partitions busy.
  std::map<TimeNs, std::map<std::int64_t, int>> changes;
  for (const TraceEvent& event : trace.events) {
    if (event.kind != EventKind::Span || event.partition < 0 || event.durationNs <= 0) continue;
    if (event.phase != Phase::Forward && event.phase != Phase::Recompute && event.phase != Phase::Backward) continue;
    changes[event.startNs][event.partition] += 1;
    changes[event.endNs()][event.partition] -= 1;
  }
  std::map<std::int64_t, int> active;
  TimeNs total = 0;
  TimeNs previousNs = 0;
  for (const auto& [atNs, deltas] : changes) {
    std::int64_t busy = 0;
    for (const auto& [j, count] : active) busy += count > 0 ? 1 : 0;
    if (busy >= 2) total += atNs - previousNs;
    for (const auto& [j, delta] : deltas) active[j] += delta;
    previousNs = atNs;
  }
  return total;
}

ChainedCalibration measureChainedCalibration(const ModelFlags& flags, const Profile& profile, std::int64_t batch,
                                             const torch::Device& device, std::int64_t steps) {
  Candidate whole;
  whole.balance = {profile.layerCount()};
  whole.chunks = 1;
  whole.checkpoint = Checkpoint::Never;
  whole.batch = batch;
  const Cluster one = Cluster::uniform(1, std::nullopt, 0.0, 0, device.is_cuda() ? "cuda:0" : "cpu:0");
  const TimeNs predictedNs = simulate(profile, one, whole).prediction.iterationNs;

  Model model = buildModelFromFlags(flags);
  TrainingOptions options;
  options.balance = whole.balance;
  options.devices = {device};
  options.chunks = 1;
  options.checkpoint = Checkpoint::Never;
  options.batch = batch;
  options.warmupSteps = 2;
  options.steps = steps;
  options.captureTrace = true;
  const Trace trace = trainAndMeasure(model, options).trace;

  // Per timed step: the pipeline's compute (forward and backward spans) and the rest of the step.
  std::vector<TimeNs> computeNs;
  std::vector<TimeNs> restNs;
  for (const TraceEvent& step : trace.events) {
    if (step.kind != EventKind::Span || step.phase != Phase::Step) continue;
    TimeNs compute = 0;
    for (const TraceEvent& op : trace.events) {
      const bool isCompute = op.phase == Phase::Forward || op.phase == Phase::Backward || op.phase == Phase::Recompute;
      if (op.kind == EventKind::Span && isCompute && op.startNs >= step.startNs && op.startNs < step.endNs()) {
        compute += op.durationNs;
      }
    }
    computeNs.push_back(compute);
    restNs.push_back(std::max<TimeNs>(0, step.durationNs - compute));
  }
  ChainedCalibration calibration;
  if (computeNs.empty()) return calibration;
  calibration.stepOverheadNs = median(restNs);
  const TimeNs measuredNs = median(computeNs);
  if (predictedNs > 0 && measuredNs > 0) {
    calibration.relativeSpeed =
        std::clamp(static_cast<double>(predictedNs) / static_cast<double>(measuredNs), 0.25, 4.0);
  }
  return calibration;
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
  span.name = "calibration (step overhead, contention)";
  span.device = "host";
  span.lane = "host";
  span.startNs = endNs;
  span.durationNs = overheadNs;
  span.phase = Phase::Optimizer;
  span.args["source"] = "measured once per sweep: grad zeroing, loss and SGD step; contention of partitions computing at once";
  trace.events.push_back(span);
}

}  // namespace pipeprof::cli
