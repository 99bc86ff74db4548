// The sweep's own calibration: the references of the candidates it will measure, in passes.
#include "sweep_calibration.h"

#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/simulator/predictor.h>
#include <pipeprof/simulator/reference_speed.h>
#include <pipeprof/tuner/candidate_selection.h>
#include <pipeprof/tuner/reference_calibration.h>
#include <pipeprof/tuner/reference_traces.h>
#include <pipeprof/tuner/sweep_setup.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

namespace pipeprof::tuner {

std::vector<Candidate> candidatesToMeasure(const SweepConfig& config, const Profile& profile, const Cluster& cluster,
                                           const Calibration& calibration) {
  const SearchResult searched = Predictor(profile, cluster, calibration).search(sweepSearchSpace(config));
  std::vector<Candidate> ranked;
  ranked.reserve(searched.ranked.size());
  for (const RankedCandidate& candidate : searched.ranked) ranked.push_back(candidate.candidate);
  const MeasurePolicy policy = config.measure.kind == MeasureKind::None ? MeasurePolicy{} : config.measure;
  std::vector<Candidate> selected;
  for (const std::size_t index : selectForMeasurement(ranked, policy)) selected.push_back(ranked[index]);
  return selected;
}

namespace {

/// How many shapes (schedule and checkpoint mode, GPipe's included) the plan's references hold:
/// what a pass's line counts.
std::size_t shapesIn(const std::vector<Candidate>& plan) {
  std::set<ReferenceShape> shapes;
  for (const Candidate& reference : plan) shapes.insert(ReferenceShape::of(reference));
  return shapes.size();
}

}  // namespace

SweepCalibration calibrateForMeasuring(const SweepConfig& config, const Profile& profile, const Cluster& cluster,
                                       CandidateMeasurer& measurer, SweepProgress& progress, const StopToken& stop) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const auto devices = static_cast<std::int64_t>(config.devices.size());

  // This calibration's references replace any an earlier sweep to the same traces kept.
  const std::string tracesDir = config.tracesDir.empty() ? std::string() : referenceTracesDir(config.tracesDir);
  if (!tracesDir.empty()) std::filesystem::remove_all(tracesDir);

  SweepCalibration result;
  result.stepsPerRun = std::max<std::int64_t>(1, config.warmupSteps) + CalibrationRounds{}.steps;
  std::vector<ReferenceRun> runs;
  std::vector<Candidate> timed;
  for (std::int64_t pass = 1; pass <= kCalibrationPasses; ++pass) {
    const std::vector<Candidate> selected = candidatesToMeasure(config, profile, cluster, result.calibration);
    const std::vector<Candidate> plan =
        referencePlanFor(profile.layerCount(), config.batch, devices, config.chunks, selected, timed);
    if (plan.empty()) break;
    const double left = config.calibrationBudgetSeconds - elapsed();
    const double expected =
        result.referenceRuns > 0 ? result.referenceSeconds / static_cast<double>(result.referenceRuns) : 0.0;
    if (pass > 1 && left < expected) {
      progress.phase(fmt::format("calibration: the budget is spent; {} reference pipeline(s) of {} shape(s) the "
                                 "candidates to measure need left untimed (they are predicted with the corrections "
                                 "the other shapes' references gave)",
                                 plan.size(), shapesIn(plan)));
      break;
    }
    progress.phase(fmt::format("calibration pass {}: {} reference pipelines ({} shape(s)) of the {} candidates to "
                               "measure{}",
                               pass, plan.size(), shapesIn(plan), selected.size(),
                               pass == 1 ? ", each shape at its largest chunk count first" : ", newly selected"));
    CalibrationRounds rounds;
    rounds.budgetSeconds = left;
    rounds.maxRounds = config.calibrationRoundsAtMost();
    rounds.warmupSteps = result.stepsPerRun - rounds.steps;
    rounds.expectedSeconds = expected;
    rounds.startedS = elapsed();
    rounds.onContended = [&](const Candidate& reference) {
      progress.phase(fmt::format("calibration: another process competed for the CPUs during {} {} x{}; timing it "
                                 "again",
                                 reference.orderLabel(), checkpointName(reference.checkpoint), reference.chunks));
    };
    rounds.onRound = [&](std::int64_t round, std::size_t measured, std::size_t planned, double seconds) {
      result.referenceSeconds += seconds;
      result.referenceRuns += measured;
      progress.phase(fmt::format("calibration round {}: {} of {} reference pipelines in {:.1f} s", round, measured,
                                 planned, seconds));
    };
    const std::size_t runsBefore = runs.size();
    const std::int64_t begun = timeReferences(measurer, plan, rounds, runs, stop);
    if (runs.size() == runsBefore) break;
    for (std::size_t k = runsBefore; k < runs.size(); ++k) {
      timed.push_back(runs[k].candidate);
      if (!tracesDir.empty()) writeReferenceTrace(runs[k], k, tracesDir);
    }
    const std::int64_t roundsSoFar = result.calibration.provenance.rounds;
    result.calibration = calibrationFromRuns(profile, cluster, runs);
    result.calibration.provenance.rounds = std::max(roundsSoFar, begun);
  }
  if (const MachineSpeedSamples speed = machineSpeedSamples(runs); speed.usable()) {
    progress.phase(fmt::format("calibration: the machine's speed moved {:.1f}% while the references ran (GPipe "
                               "x{} took {:.2f}-{:.2f} ms a step over {} runs)",
                               100.0 * speed.spread(), speed.probeChunks, static_cast<double>(speed.fastestNs()) / 1e6,
                               static_cast<double>(speed.slowestNs()) / 1e6, speed.stepNs.size()));
  }
  return result;
}

}  // namespace pipeprof::tuner
