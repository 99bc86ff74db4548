// The sweep's chained-compute calibration: per micro-batch scales and per chunk-count step overhead.
#include "chained_calibration.h"

#include <pipeprof/simulator/simulator.h>

#include <fmt/format.h>

#include <algorithm>

namespace pipeprof::cli {
namespace {

TimeNs median(std::vector<TimeNs> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double clampedRatio(TimeNs measuredNs, TimeNs profiledNs) {
  if (measuredNs <= 0 || profiledNs <= 0) return 1.0;
  return std::clamp(static_cast<double>(measuredNs) / static_cast<double>(profiledNs), 0.25, 4.0);
}

TimeNs scaled(TimeNs ns, double scale) { return static_cast<TimeNs>(static_cast<double>(ns) * scale + 0.5); }

std::vector<const TraceEvent*> stepSpans(const Trace& trace) {
  std::vector<const TraceEvent*> steps;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Span && event.phase == Phase::Step) steps.push_back(&event);
  }
  return steps;
}

/// Per micro-batch size, the whole model's forward and backward time of every micro-batch of
/// every timed step: the sum of its spans over the partitions.
struct WholeModelSamples {
  std::map<std::int64_t, std::vector<TimeNs>> forwardNs;
  std::map<std::int64_t, std::vector<TimeNs>> backwardNs;

  void add(const ReferenceRun& run) {
    const MicroBatching split = microBatching(run.candidate.batch, run.candidate.chunks);
    for (const TraceEvent* step : stepSpans(run.trace)) {
      std::map<std::int64_t, TimeNs> forward;   // by micro-batch
      std::map<std::int64_t, TimeNs> backward;
      for (const TraceEvent& op : run.trace.events) {
        if (op.kind != EventKind::Span || op.microBatch < 0 || op.partition < 0) continue;
        if (op.startNs < step->startNs || op.startNs >= step->endNs()) continue;  // warm-up
        if (op.phase == Phase::Forward) forward[op.microBatch] += op.durationNs;
        if (op.phase == Phase::Backward) backward[op.microBatch] += op.durationNs;
      }
      auto sizeOf = [&](std::int64_t i) { return i + 1 < split.count ? split.chunkSize : split.lastSize; };
      for (const auto& [i, ns] : forward) forwardNs[sizeOf(i)].push_back(ns);
      for (const auto& [i, ns] : backward) backwardNs[sizeOf(i)].push_back(ns);
    }
  }
};

}  // namespace

TimeNs ChainedCalibration::stepOverheadNs(std::int64_t chunks) const {
  if (overheadNs.empty()) return 0;
  auto above = overheadNs.upper_bound(chunks);
  return above == overheadNs.begin() ? above->second : std::prev(above)->second;
}

ChainedCalibration chainedCalibrationFromRuns(const Profile& profile, const Cluster& cluster,
                                              const std::vector<ReferenceRun>& runs) {
  WholeModelSamples samples;
  for (const ReferenceRun& run : runs) samples.add(run);
  ChainedCalibration calibration;
  for (const auto& [size, forwardNs] : samples.forwardNs) {
    TimeNs profiledForwardNs = 0;
    TimeNs profiledBackwardNs = 0;
    for (const LayerProfile& layer : profile.layers) {
      const CostSample cost = layer.costAt(size);
      profiledForwardNs += cost.forwardNs;
      profiledBackwardNs += cost.backwardNs;
    }
    MicroBatchScale& scale = calibration.scales[size];
    scale.forward = clampedRatio(median(forwardNs), profiledForwardNs);
    auto backward = samples.backwardNs.find(size);
    if (backward != samples.backwardNs.end()) scale.backward = clampedRatio(median(backward->second), profiledBackwardNs);
  }
  // Runs of one chunk count (several rounds of the same reference) pool their steps.
  std::map<std::int64_t, std::vector<TimeNs>> stepNs;
  std::map<std::int64_t, Candidate> candidates;
  for (const ReferenceRun& run : runs) {
    for (const TraceEvent* step : stepSpans(run.trace)) stepNs[run.candidate.chunks].push_back(step->durationNs);
    candidates[run.candidate.chunks] = run.candidate;
  }
  const Profile calibrated = calibratedProfile(profile, calibration);
  for (const auto& [chunks, samples] : stepNs) {
    const TimeNs predictedNs = simulate(calibrated, cluster, candidates.at(chunks)).prediction.iterationNs;
    calibration.overheadNs[chunks] = std::max<TimeNs>(0, median(samples) - predictedNs);
  }
  return calibration;
}

Profile calibratedProfile(Profile profile, const ChainedCalibration& calibration) {
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) {
      auto scale = calibration.scales.find(cost.microBatch);
      if (scale == calibration.scales.end()) continue;
      cost.forwardNs = scaled(cost.forwardNs, scale->second.forward);
      cost.backwardNs = scaled(cost.backwardNs, scale->second.backward);
    }
  }
  return profile;
}

std::string describeChainedCalibration(const ChainedCalibration& calibration) {
  if (calibration.scales.empty()) return "calibration: none (no calibration run)";
  auto range = [&](double MicroBatchScale::*member) {
    double low = 4.0;
    double high = 0.0;
    for (const auto& [size, scale] : calibration.scales) {
      low = std::min(low, scale.*member);
      high = std::max(high, scale.*member);
    }
    return fmt::format("{:.2f}-{:.2f}", low, high);
  };
  TimeNs lowNs = calibration.overheadNs.empty() ? 0 : calibration.overheadNs.begin()->second;
  TimeNs highNs = lowNs;
  for (const auto& [chunks, ns] : calibration.overheadNs) {
    lowNs = std::min(lowNs, ns);
    highNs = std::max(highNs, ns);
  }
  return fmt::format("calibration: layers chained in the pipeline take {} (forward) and {} (backward) x their "
                     "profiled time at micro-batches {}-{}; step overhead {}-{} (grad zeroing, loss, SGD step, "
                     "waking the workers)",
                     range(&MicroBatchScale::forward), range(&MicroBatchScale::backward),
                     calibration.scales.begin()->first, calibration.scales.rbegin()->first, formatDuration(lowNs),
                     formatDuration(highNs));
}

nlohmann::json toJson(const ChainedCalibration& calibration) {
  nlohmann::json scales = nlohmann::json::array();
  for (const auto& [size, scale] : calibration.scales) {
    scales.push_back({{"micro_batch", size}, {"forward", scale.forward}, {"backward", scale.backward}});
  }
  nlohmann::json overheads = nlohmann::json::array();
  for (const auto& [chunks, ns] : calibration.overheadNs) overheads.push_back({{"chunks", chunks}, {"ns", ns}});
  return {{"micro_batch_scales", scales}, {"step_overhead_ns", overheads}};
}

ChainedCalibration chainedCalibrationFromJson(const nlohmann::json& json) {
  ChainedCalibration calibration;
  if (!json.is_object()) return calibration;
  for (const auto& item : json.value("micro_batch_scales", nlohmann::json::array())) {
    calibration.scales[item.at("micro_batch").get<std::int64_t>()] = {item.at("forward").get<double>(),
                                                                       item.at("backward").get<double>()};
  }
  for (const auto& item : json.value("step_overhead_ns", nlohmann::json::array())) {
    calibration.overheadNs[item.at("chunks").get<std::int64_t>()] = item.at("ns").get<TimeNs>();
  }
  return calibration;
}

}  // namespace pipeprof::cli
