// The Predictor: simulate() and search() on calibrated inputs, plus the calibrated step overhead.
#include <pipeprof/simulator/predictor.h>

#include <algorithm>

namespace pipeprof {

Predictor::CalibratedInputs Predictor::calibrated(const Profile& profile, const Cluster& cluster,
                                                  const Calibration& calibration) {
  return {calibratedProfile(profile, calibration), calibratedCluster(cluster, calibration), calibration};
}

namespace {

/// The calibration of every shape that neither its own shape nor its schedule in another mode
/// corrects (Calibration::forShape of such a shape): the calibration's own corrections and loss
/// cold start.
Calibration everyOtherShape(Calibration calibration) {
  calibration.byShape.clear();
  calibration.lossColdStartByShape.clear();
  return calibration;
}

}  // namespace

Predictor::Predictor(Profile profile, Cluster cluster, Calibration calibration)
    : calibration_(std::move(calibration)), base_(calibrated(profile, cluster, everyOtherShape(calibration_))) {
  for (const auto& entry : calibration_.byShape) {
    byShape_.emplace(entry.first, calibrated(profile, cluster, calibration_.forShape(entry.first)));
  }
  for (const auto& entry : calibration_.lossColdStartByShape) {
    byShape_.try_emplace(entry.first, calibrated(profile, cluster, calibration_.forShape(entry.first)));
  }
}

const Predictor::CalibratedInputs& Predictor::inputsFor(const ReferenceShape& shape) const {
  if (calibration_.lossColdStartByShape.count(shape) > 0) return byShape_.at(shape);
  const ReferenceShape* key = calibration_.correctingShape(shape);
  return key == nullptr ? base_ : byShape_.at(*key);
}

SimulationResult Predictor::predict(const Candidate& candidate, const SimulationOptions& options) const {
  const CalibratedInputs& inputs = inputsFor(ReferenceShape::of(candidate));
  SimulationResult result = simulate(inputs.profile, inputs.cluster, candidate, options);
  if (!options.training) return result;
  const TimeNs overheadNs = inputs.corrections.stepOverheadNsFor(candidate.chunks);
  addStepOverhead(result.prediction, overheadNs, candidate.batch);
  if (options.recordTrace && overheadNs > 0) appendStepOverheadSpan(result.trace, overheadNs);
  return result;
}

SearchResult Predictor::search(const SearchSpace& space, const SearchProgress& progress) const {
  auto inputs = [&](ScheduleKind kind, std::int64_t stagesPerDevice, Checkpoint mode) {
    const CalibratedInputs& own = inputsFor({scheduleLabel(kind, stagesPerDevice), mode});
    return ShapeInputs{&own.profile, &own.cluster};
  };
  SearchResult result = pipeprof::search(inputs, space, progress);
  auto addOverhead = [&](RankedCandidate& entry) {
    if (entry.prediction.iterationNs <= 0) return;  // not simulated (a shape the schedule cannot run)
    const CalibratedInputs& own = inputsFor(ReferenceShape::of(entry.candidate));
    addStepOverhead(entry.prediction, own.corrections.stepOverheadNsFor(entry.candidate.chunks), entry.candidate.batch);
  };
  std::for_each(result.ranked.begin(), result.ranked.end(), addOverhead);
  std::for_each(result.rejected.begin(), result.rejected.end(), addOverhead);
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    return a.prediction.samplesPerS > b.prediction.samplesPerS;
  });
  return result;
}

void addStepOverhead(Prediction& prediction, TimeNs overheadNs, std::int64_t batch) {
  prediction.iterationNs += overheadNs;
  prediction.samplesPerS =
      prediction.iterationNs > 0 ? static_cast<double>(batch) * 1e9 / static_cast<double>(prediction.iterationNs) : 0.0;
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
  span.args["source"] =
      "the calibration's step overhead: grad zeroing, waking the workers, what the simulated ops miss";
  trace.events.push_back(span);
}

}  // namespace pipeprof
