// Fitting a calibration to traced reference pipelines: scales per micro-batch size, device speeds, step overheads.
#include <pipeprof/simulator/calibration_fit.h>

#include <pipeprof/core/statistics.h>
#include <pipeprof/simulator/simulator.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

namespace pipeprof {
namespace {

double clampedRatio(TimeNs measuredNs, TimeNs profiledNs) {
  if (measuredNs <= 0 || profiledNs <= 0) return 1.0;
  return std::clamp(static_cast<double>(measuredNs) / static_cast<double>(profiledNs), 0.25, 4.0);
}

std::vector<const TraceEvent*> stepSpans(const Trace& trace) {
  std::vector<const TraceEvent*> steps;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Span && event.phase == Phase::Step) steps.push_back(&event);
  }
  return steps;
}

/// Calls visit(op, size, step) for every forward and backward span of a pipeline op inside a
/// timed step (warm-up ops lie outside every step span), with its micro-batch's size in samples
/// and the index of its step.
template <typename Visit>
void forEachTimedOp(const ReferenceRun& run, Visit visit) {
  const MicroBatching split = microBatching(run.candidate.batch, run.candidate.chunks);
  const std::vector<const TraceEvent*> steps = stepSpans(run.trace);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (const TraceEvent& op : run.trace.events) {
      if (op.kind != EventKind::Span || op.microBatch < 0 || op.partition < 0) continue;
      if (op.phase != Phase::Forward && op.phase != Phase::Backward) continue;
      if (op.startNs < steps[s]->startNs || op.startNs >= steps[s]->endNs()) continue;
      visit(op, op.microBatch + 1 < split.count ? split.chunkSize : split.lastSize, s);
    }
  }
}

/// Per micro-batch size, the whole model's forward and backward time of every micro-batch of
/// every timed step: the sum of its spans over the partitions.
struct WholeModelSamples {
  std::map<std::int64_t, std::vector<TimeNs>> forwardNs;
  std::map<std::int64_t, std::vector<TimeNs>> backwardNs;

  void add(const ReferenceRun& run) {
    // (step, micro-batch, phase) -> (size, time summed over the partitions)
    std::map<std::tuple<std::size_t, std::int64_t, Phase>, std::pair<std::int64_t, TimeNs>> sums;
    forEachTimedOp(run, [&](const TraceEvent& op, std::int64_t size, std::size_t step) {
      auto& [sumSize, sumNs] = sums[{step, op.microBatch, op.phase}];
      sumSize = size;
      sumNs += op.durationNs;
    });
    for (const auto& [key, sum] : sums) {
      (std::get<2>(key) == Phase::Forward ? forwardNs : backwardNs)[sum.first].push_back(sum.second);
    }
  }
};

/// Per partition j: the calibrated profile's forward + backward time of its layers over what
/// its spans measured, over every timed step of every run (clamped to [0.5, 2]).
std::vector<double> deviceSpeeds(const Profile& calibrated, const std::vector<ReferenceRun>& runs) {
  std::vector<TimeNs> predictedNs;
  std::vector<TimeNs> measuredNs;
  for (const ReferenceRun& run : runs) {
    const std::vector<std::int64_t>& balance = run.candidate.balance;
    predictedNs.resize(std::max(predictedNs.size(), balance.size()), 0);
    measuredNs.resize(predictedNs.size(), 0);
    forEachTimedOp(run, [&](const TraceEvent& op, std::int64_t size, std::size_t /*step*/) {
      const auto j = static_cast<std::size_t>(op.partition);
      if (j >= balance.size()) return;
      const auto first = std::accumulate(balance.begin(), balance.begin() + static_cast<std::ptrdiff_t>(j),
                                         std::int64_t{0});
      for (std::int64_t layer = first; layer < first + balance[j]; ++layer) {
        const CostSample cost = calibrated.layers[static_cast<std::size_t>(layer)].costAt(size);
        predictedNs[j] += op.phase == Phase::Forward ? cost.forwardNs : cost.backwardNs;
      }
      measuredNs[j] += op.durationNs;
    });
  }
  std::vector<double> speeds;
  for (std::size_t j = 0; j < predictedNs.size(); ++j) {
    const double ratio = predictedNs[j] > 0 && measuredNs[j] > 0
                             ? static_cast<double>(predictedNs[j]) / static_cast<double>(measuredNs[j])
                             : 1.0;
    speeds.push_back(std::clamp(ratio, 0.5, 2.0));
  }
  return speeds;
}

}  // namespace

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

Calibration calibrationFromRuns(const Profile& profile, const Cluster& cluster, const std::vector<ReferenceRun>& runs) {
  WholeModelSamples samples;
  for (const ReferenceRun& run : runs) samples.add(run);
  Calibration calibration;
  for (const auto& [size, forwardNs] : samples.forwardNs) {
    TimeNs profiledForwardNs = 0;
    TimeNs profiledBackwardNs = 0;
    for (const LayerProfile& layer : profile.layers) {
      const CostSample cost = layer.costAt(size);
      profiledForwardNs += cost.forwardNs;
      profiledBackwardNs += cost.backwardNs;
    }
    MicroBatchScale& scale = calibration.scales[size];
    scale.forward = clampedRatio(medianNs(forwardNs), profiledForwardNs);
    auto backward = samples.backwardNs.find(size);
    if (backward != samples.backwardNs.end()) scale.backward = clampedRatio(medianNs(backward->second), profiledBackwardNs);
  }
  const Profile calibrated = calibratedProfile(profile, calibration);
  calibration.deviceSpeeds = deviceSpeeds(calibrated, runs);
  const Cluster calibratedDevices = calibratedCluster(cluster, calibration);

  // Runs of one chunk count (several rounds of the same reference) pool their steps.
  std::map<std::int64_t, std::vector<TimeNs>> stepNs;
  std::map<std::int64_t, Candidate> candidates;
  for (const ReferenceRun& run : runs) {
    for (const TraceEvent* step : stepSpans(run.trace)) stepNs[run.candidate.chunks].push_back(step->durationNs);
    candidates[run.candidate.chunks] = run.candidate;
  }
  for (const auto& [chunks, pooledNs] : stepNs) {
    const Candidate& reference = candidates.at(chunks);
    const TimeNs predictedNs = simulate(calibrated, calibratedDevices, reference).prediction.iterationNs;
    const TimeNs medianStepNs = medianNs(pooledNs);
    calibration.stepOverheadNs[chunks] = std::max<TimeNs>(0, medianStepNs - predictedNs);
    calibration.provenance.references.push_back(
        {chunks, reference.balance, static_cast<std::int64_t>(pooledNs.size()), medianStepNs});
  }
  return calibration;
}

}  // namespace pipeprof
