// The calibration probe's samples of the machine's speed.
#include <pipeprof/simulator/reference_speed.h>

#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <cstddef>
#include <utility>

namespace pipeprof {
namespace {

bool isProbeShape(const Candidate& candidate) {
  return candidate.schedule == ScheduleKind::GPipe && candidate.checkpoint == Checkpoint::Never && !candidate.order;
}

/// The median of the run's step spans; 0 without any.
TimeNs medianStepNs(const Trace& trace) {
  std::vector<TimeNs> steps;
  for (const TraceEvent* step : stepSpans(trace)) steps.push_back(step->durationNs);
  return steps.empty() ? 0 : medianNs(std::move(steps));
}

}  // namespace

TimeNs MachineSpeedSamples::fastestNs() const {
  return stepNs.empty() ? 0 : *std::min_element(stepNs.begin(), stepNs.end());
}

TimeNs MachineSpeedSamples::slowestNs() const {
  return stepNs.empty() ? 0 : *std::max_element(stepNs.begin(), stepNs.end());
}

double MachineSpeedSamples::spread() const {
  if (!usable() || fastestNs() <= 0) return 0.0;
  return static_cast<double>(slowestNs()) / static_cast<double>(fastestNs()) - 1.0;
}

MachineSpeedSamples machineSpeedSamples(const std::vector<ReferenceRun>& runs) {
  std::int64_t probeChunks = 0;
  for (const ReferenceRun& run : runs) {
    if (isProbeShape(run.candidate)) probeChunks = std::max(probeChunks, run.candidate.chunks);
  }
  std::vector<std::pair<double, TimeNs>> timed;  // (moment, median step), by moment
  for (const ReferenceRun& run : runs) {
    if (!isProbeShape(run.candidate) || run.candidate.chunks != probeChunks || run.atS < 0.0) continue;
    const TimeNs stepNs = medianStepNs(run.trace);
    if (stepNs > 0) timed.emplace_back(run.atS, stepNs);
  }
  std::stable_sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  MachineSpeedSamples samples;
  samples.probeChunks = probeChunks;
  for (const auto& [atS, stepNs] : timed) {
    samples.atS.push_back(atS);
    samples.stepNs.push_back(stepNs);
  }
  return samples;
}

}  // namespace pipeprof
