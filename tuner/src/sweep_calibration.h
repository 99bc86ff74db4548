// The sweep's own calibration: reference pipelines of the shapes and chunk counts it is about to
// measure, in passes until the candidates it would measure hold still.
//
//   pass 1   rank every candidate by the raw profile; select the ones to measure (--measure);
//            time GPipe without checkpoints at every chunk count and each selected shape
//            (schedule, v, checkpoint mode) at its candidates' chunk counts, in rounds
//   pass 2.. fit, rank again, select again: the shapes and chunk counts not yet timed (a
//            shape the corrections moved into the selection) are timed in their own rounds
//   end      when the selection needs nothing new, after kCalibrationPasses, or when the budget
//            is spent
//
// Every reference is a sample of the one set of corrections every candidate is predicted with
// (simulator/calibration_fit.h), timed or not. The default mlp sweep times 14 references in its
// first pass (the last of them the probe of the machine's speed, simulator/reference_speed.h),
// instead of the 70 a round of every shape at every chunk count (tuner/reference_calibration.h).
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/sweep.h>
#include <pipeprof/tuner/sweep_progress.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipeprof::tuner {

/// At most this many passes. Each pass's references are noisy, and the selection they imply
/// moves by a few candidates each time: the default mlp sweep's passes timed 13, 7, 6, 4, 3, 2,
/// 4, 2 and 1 references when nothing bounded them (4.6 s, 13% of the sweep), 13, 5-7 and 1-5
/// with three (1.6-3.2 s).
constexpr std::int64_t kCalibrationPasses = 3;

/// What the sweep's reference pipelines gave: the calibration and what the runs took.
struct SweepCalibration {
  Calibration calibration;
  double referenceSeconds = 0.0;  ///< the reference runs' wall time, all passes
  std::size_t referenceRuns = 0;
  std::int64_t stepsPerRun = 0;  ///< warm-up included
};

/// The candidates the sweep would measure if `calibration` were final: the search of `config`
/// predicted with it, selected by config.measure (top:12's rule under --measure none, so that
/// the suggestion is calibrated).
std::vector<Candidate> candidatesToMeasure(const SweepConfig& config, const Profile& profile, const Cluster& cluster,
                                           const Calibration& calibration);

/// Times the references of the candidates the sweep will measure (see the file comment) through
/// `measurer`, within config.calibrationBudgetSeconds in all and config.calibrationRoundsAtMost() rounds
/// a pass, and fits the calibration to every run. Throws what the measurer and the fit throw, and
/// TrainingStopped when `stop` asks.
SweepCalibration calibrateForMeasuring(const SweepConfig& config, const Profile& profile, const Cluster& cluster,
                                       CandidateMeasurer& measurer, SweepProgress& progress,
                                       const StopToken& stop = {});

}  // namespace pipeprof::tuner
