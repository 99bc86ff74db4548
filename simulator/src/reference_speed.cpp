// Reference runs brought to one machine speed: the probe's samples and each run's factor.
#include <pipeprof/simulator/reference_speed.h>

#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>

namespace pipeprof {
namespace {

constexpr double kLowestFactor = 0.5;
constexpr double kHighestFactor = 2.0;

bool isProbeShape(const Candidate& candidate) {
  return candidate.schedule == ScheduleKind::GPipe && candidate.checkpoint == Checkpoint::Never && !candidate.order;
}

/// The median of the run's step spans; 0 without any.
TimeNs medianStepNs(const Trace& trace) {
  std::vector<TimeNs> steps;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Span && event.phase == Phase::Step) steps.push_back(event.durationNs);
  }
  return steps.empty() ? 0 : medianNs(std::move(steps));
}

/// The probe's step at moment `atS`: the line between the samples around it, the nearest
/// sample's outside them.
double stepAt(const MachineSpeedSamples& samples, double atS) {
  const std::vector<double>& at = samples.atS;
  const auto after = std::upper_bound(at.begin(), at.end(), atS);
  if (after == at.begin()) return static_cast<double>(samples.stepNs.front());
  if (after == at.end()) return static_cast<double>(samples.stepNs.back());
  const auto k = static_cast<std::size_t>(after - at.begin());
  const double span = at[k] - at[k - 1];
  const double weight = span > 0.0 ? (atS - at[k - 1]) / span : 1.0;
  return (1.0 - weight) * static_cast<double>(samples.stepNs[k - 1]) + weight * static_cast<double>(samples.stepNs[k]);
}

}  // namespace

double MachineSpeedSamples::spread() const {
  if (!usable()) return 0.0;
  const auto [fastest, slowest] = std::minmax_element(stepNs.begin(), stepNs.end());
  return *fastest > 0 ? static_cast<double>(*slowest) / static_cast<double>(*fastest) - 1.0 : 0.0;
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
  if (!samples.stepNs.empty()) samples.medianStepNs = medianNs(samples.stepNs);
  return samples;
}

std::vector<double> steadySpeedFactors(const std::vector<ReferenceRun>& runs) {
  std::vector<double> factors(runs.size(), 1.0);
  const MachineSpeedSamples samples = machineSpeedSamples(runs);
  if (!samples.usable()) return factors;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].atS < 0.0) continue;
    const double factor = static_cast<double>(samples.medianStepNs) / stepAt(samples, runs[k].atS);
    factors[k] = std::clamp(factor, kLowestFactor, kHighestFactor);
  }
  return factors;
}

std::vector<ReferenceRun> atSteadySpeed(std::vector<ReferenceRun> runs) {
  const std::vector<double> factors = steadySpeedFactors(runs);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (factors[k] != 1.0) scaleTraceTimes(runs[k].trace, factors[k]);
  }
  return runs;
}

}  // namespace pipeprof
