// The Predictor: simulate() and search() on calibrated inputs, plus the calibrated step overhead.
#include <pipeprof/simulator/predictor.h>

#include <algorithm>
#include <cmath>

namespace pipeprof {
namespace {

TimeNs scaled(TimeNs ns, double factor) { return std::llround(static_cast<double>(ns) * factor); }

}  // namespace

Predictor::Predictor(Profile profile, Cluster cluster, Calibration calibration)
    : profile_(calibratedProfile(std::move(profile), calibration)),
      cluster_(calibratedCluster(std::move(cluster), calibration)),
      calibration_(std::move(calibration)) {}

SimulationResult Predictor::predict(const Candidate& candidate, const SimulationOptions& options) const {
  SimulationResult result = simulate(profile_, cluster_, candidate, options);
  if (!options.training) return result;
  const TimeNs overheadNs = calibration_.stepOverheadNsFor(candidate.chunks);
  addStepOverhead(result.prediction, overheadNs, candidate.batch);
  if (options.recordTrace && overheadNs > 0) appendStepOverheadSpan(result.trace, overheadNs);
  const double scale = calibration_.scheduleScaleFor(candidate.schedule, candidate.stagesPerDevice);
  if (scale != 1.0) {
    result.prediction = scaledPrediction(std::move(result.prediction), scale, candidate.batch);
    scaleTraceTimes(result.trace, scale);
  }
  return result;
}

SearchResult Predictor::search(const SearchSpace& space, const SearchProgress& progress) const {
  SearchResult result = pipeprof::search(profile_, cluster_, space, progress);
  auto addOverhead = [&](RankedCandidate& entry) {
    if (entry.prediction.iterationNs <= 0) return;  // not simulated (a shape the schedule cannot run)
    const Candidate& candidate = entry.candidate;
    addStepOverhead(entry.prediction, calibration_.stepOverheadNsFor(candidate.chunks), candidate.batch);
    const double scale = calibration_.scheduleScaleFor(candidate.schedule, candidate.stagesPerDevice);
    if (scale != 1.0) entry.prediction = scaledPrediction(std::move(entry.prediction), scale, candidate.batch);
  };
  std::for_each(result.ranked.begin(), result.ranked.end(), addOverhead);
  std::for_each(result.rejected.begin(), result.rejected.end(), addOverhead);
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    return a.prediction.samplesPerS > b.prediction.samplesPerS;
  });
  return result;
}

Prediction scaledPrediction(Prediction prediction, double factor, std::int64_t batch) {
  prediction.iterationNs = scaled(prediction.iterationNs, factor);
  for (TimeNs& busy : prediction.busyNs) busy = scaled(busy, factor);
  prediction.samplesPerS = prediction.iterationNs > 0
                               ? static_cast<double>(batch) * 1e9 / static_cast<double>(prediction.iterationNs)
                               : 0.0;
  return prediction;
}

void scaleTraceTimes(Trace& trace, double factor) {
  for (TraceEvent& event : trace.events) {
    const TimeNs endNs = scaled(event.endNs(), factor);
    event.startNs = scaled(event.startNs, factor);
    event.durationNs = endNs - event.startNs;  // adjacent spans stay adjacent after rounding
  }
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
  span.args["source"] = "the calibration's step overhead: grad zeroing, loss, SGD step, waking the workers";
  trace.events.push_back(span);
}

}  // namespace pipeprof
