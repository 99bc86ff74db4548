// How steady the machine was while a sweep measured: what says how far a report's measured
// figures, and the ranking they make, can be trusted.
//
// Three things a sweep records make the judgement (docs/cli.md, "Measuring on a shared machine"):
// each candidate's rounds (do they agree: Measurement::roundsAgree), the rounds measured again
// because another process competed for the CPUs (Measurement::discardedRounds, stepCpuWaitNs),
// and the reference pipelines timed between the candidates (the report's calibration_drift:
// how the machine's speed moved over the measuring time).
#pragma once

#include <pipeprof/core/report.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

struct MeasuringConditions {
  std::int64_t measuredCount = 0;
  std::int64_t roundsAgreeCount = 0;  ///< measured candidates whose rounds agree
  std::int64_t remeasuredRounds = 0;  ///< rounds measured again: another process competed for the CPUs
  std::int64_t contendedRounds = 0;   ///< rounds kept though their threads waited for a CPU (kContendedCpuWait)
  std::int64_t referenceRuns = 0;     ///< reference pipelines timed while measuring
  /// Their step over their calibrated prediction, run by run: the lowest, the median and the
  /// highest (nullopt without timed references). 1.0 is the calibration's speed; a range of
  /// 0.9-1.3 says the machine ran up to 10% faster and 30% slower while it measured.
  std::optional<double> referenceRatioLow;
  std::optional<double> referenceRatioMedian;
  std::optional<double> referenceRatioHigh;
  /// The lowest and highest Measurement::machineSlowdown of the measured candidates: how much
  /// slower (> 1) or faster than the measuring phase's average the machine ran during each one's
  /// rounds (nullopt where no candidate has one).
  std::optional<double> candidateSlowdownLow;
  std::optional<double> candidateSlowdownHigh;
  /// The measured candidates, by report index, that the best measured one is not told apart
  /// from: the range of their rounds' medians overlaps its own (the best one is not listed).
  std::vector<std::size_t> tiedWithBest;
  /// The measured candidates a run-off measured again (Measurement::runOffRounds), and the most
  /// run-off rounds one of them got (0 and 0 where the sweep held none).
  std::int64_t runOffCandidates = 0;
  std::int64_t runOffRounds = 0;
};

/// A round whose threads waited for a CPU, together, more than this share of its steps' time
/// (Measurement::roundCpuWait) ran while another process competed for the cores. On the 2-core
/// development machine a pipeline alone waited 0.5-13% (threads) and 6-18% (--procs 2) of its
/// steps' time, beside a busy loop 62-66% and 36-38% (docs/performance.md, "A sweep that knows
/// when it drifted").
inline constexpr double kContendedCpuWait = 0.25;

/// Whether a run or round whose threads waited `cpuWaitShare` of its steps' time for a CPU
/// (cpuWaitShare, Measurement::roundCpuWait) ran contended: past kContendedCpuWait. Unknown
/// waits are not contended.
inline bool contendedForCpus(std::optional<double> cpuWaitShare) {
  return cpuWaitShare && *cpuWaitShare > kContendedCpuWait;
}

MeasuringConditions summarizeMeasuringConditions(const Report& report);

/// Half the range of a measurement's round medians over its median, as a fraction: what the
/// figure is uncertain by (0 for one round).
double roundUncertainty(const Measurement& measurement);

/// A candidate whose rounds ran at least this much slower or faster than the measuring phase's
/// average (Measurement::machineSlowdown) has it said beside its figure in the table and the GUI.
inline constexpr double kNotableSlowdown = 0.05;

/// "machine 8% slow during its rounds" (or "fast") where `measurement`'s machineSlowdown is
/// kNotableSlowdown or more from 1; "" otherwise.
std::string slowdownNote(const Measurement& measurement);

}  // namespace pipeprof
