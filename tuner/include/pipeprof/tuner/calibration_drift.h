// The sweep's drift correction: the reference pipelines timed again while the candidates are
// measured, and the one factor by which the machine ran slower (or faster) then than while it
// was calibrated.
//
// The calibration (tuner/reference_calibration.h) times the reference pipelines -- every device, an
// even balance, `never`, one per chunk count -- for a few seconds before the candidates are
// measured. On a shared machine the minutes of measuring that follow can run 10-20% faster or
// slower than those seconds did, and every prediction then carries that offset. So each
// measuring round trains the references too, and
//
//   ratio = median over chunk counts m of  median(reference m's steps in the measuring rounds)
//                                          / reference m's prediction (calibrated, no drift)
//   factor = ratio ^ share,   share = tau^2 / (tau^2 + noise^2)
//
// and the sweep multiplies every predicted time by the factor. The ratio is partly noise: the
// references sample other moments of the machine's wandering speed than the candidates do, and
// each reference's prediction carries an error of its own. `noise` is the standard error of
// log(ratio) the sweep's own reference runs show (referenceNoise()); `tau` (kMachineDriftSd) is
// how far the machine's speed moves between calibrating and measuring, in log terms. The share
// is the one that predicts the true offset best when both are normal (empirical Bayes): the
// whole ratio when the references agree, little of it when they scatter. Without two timed runs
// the noise is unknown and the share is a half (the fixed share before 2026-12-02).
//
// Re-scored on 59 sweeps of the 2-core development machine (2026-12-01..02, bench/drift_shrinkage.py,
// docs/performance.md, "How much of the drift to correct"): mean step MAPE 7.70% with a fixed
// half, 7.32% with the whole ratio, 7.16% with this share; fitted on random halves of the sweeps
// and scored on the others, it beat the fixed half in 100 of 100 halves and the whole ratio in 65.
// One factor for all candidates keeps their predicted order exactly: it corrects the offset,
// never the ranking.
//
// A measured candidate's own factor. The machine's speed also moves within the measuring
// rounds, over seconds: a candidate whose rounds fell in a slow spell measures slow, and the
// reference runs timed around those rounds ran slow too. Each reference run's log ratio less its
// chunk count's mean says how far the machine ran from the measuring phase's average at that
// moment; a Gaussian-weighted mean of them (kLocalSpeedBandwidthS) at a round's middle is the
// machine's speed then, and a candidate's predictions are scaled by
//
//   (ratio x exp(step-weighted mean over its rounds of that local deviation)) ^ share
//
// Re-scored on the 18 reports of the accuracy suite of 2026-12-04 (bench/local_drift.py,
// docs/performance.md, "The machine's speed during each candidate's rounds"): where the machine
// moved within a sweep (readme's two runs, unet's second: a candidate's rounds 8-11% apart in log
// terms) the local deviation followed the rounds with a correlation of 0.76-0.86 and took 26-48%
// of their spread out, and those sweeps' step MAPE fell from 3.7%, 3.3%, 8.6% to 2.5%, 2.7%,
// 6.4%; elsewhere it followed them little and moved the error by -1.0 to +0.9 points. Mean
// step MAPE over the 18: 4.62% with the sweep's one factor, 4.38% with each candidate's.
#pragma once

#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace pipeprof::tuner {

/// How far this kind of machine's speed moves between a sweep's calibration and its measuring
/// rounds: a standard deviation of the log ratio, 0.085 (about 8.5%). The references' log ratio
/// over 59 sweeps of the shared 2-core development machine (2026-12-01..02) spread by 0.093, of
/// which the references' own noise (median standard error 0.037) leaves sqrt(0.093^2 - 0.037^2).
inline constexpr double kMachineDriftSd = 0.085;

/// How long a spell of the machine's speed a round is compared with: the standard deviation, in
/// seconds, of the Gaussian weight a reference run gets by its distance in time from a round.
/// 10 s: 5, 10, 20, 40 and 80 s read 4.47%, 4.38%, 4.38%, 4.46% and 4.57% mean step MAPE on the
/// suite's 18 sweeps of 2026-12-04 (4.62% with the sweep's one factor).
inline constexpr double kLocalSpeedBandwidthS = 10.0;

/// One timed run of a reference pipeline while the candidates were measured.
struct ReferenceTiming {
  std::int64_t chunks = 0;
  double startS = 0.0;         ///< when it began, seconds after the sweep began
  std::vector<TimeNs> stepNs;  ///< its timed steps
};

struct CalibrationDrift {
  /// Each reference's predicted step time before drift (the calibrated simulation plus its
  /// step overhead), by chunk count.
  std::map<std::int64_t, TimeNs> predictedNs;
  /// Each reference's steps timed during the measuring rounds, by chunk count, in order.
  std::map<std::int64_t, std::vector<TimeNs>> measuredNs;
  /// The same steps run by run, in the order they ran, with their times (empty in reports
  /// written before they were kept).
  std::vector<ReferenceTiming> timings;

  /// Records one timed run of reference `chunks` that began `startS` after the sweep began.
  void add(std::int64_t chunks, double startS, const std::vector<TimeNs>& stepNs);

  /// How much slower (> 1) or faster the references ran while the candidates were measured than
  /// predicted (the file comment's ratio), clamped to [0.5, 2]. 1.0 until a chunk count has both
  /// a prediction and a timed step.
  double referenceRatio() const;
  /// The standard error of log(referenceRatio()) as the timed runs show it: between chunk
  /// counts, the variance of their mean log ratios over their number; within one, the pooled
  /// variance of its runs' log ratios over the number of runs; the square root of the sum.
  /// Empty with fewer than two timed runs that have a prediction.
  std::optional<double> referenceNoise() const;
  /// How much of the ratio (in log terms) the factor takes: kMachineDriftSd^2 / (kMachineDriftSd^2
  /// + referenceNoise()^2), or a half where the noise is unknown.
  double share() const;
  /// What the sweep scales every predicted time by: referenceRatio() ^ share().
  double factor() const;

  /// How much slower (> 1) or faster the machine ran around `atS` (seconds after the sweep began)
  /// than over the whole measuring phase: exp of the mean, Gaussian-weighted by time
  /// (kLocalSpeedBandwidthS), of each timed reference run's log ratio less its chunk count's
  /// mean. A run counts at its middle. 1.0 with fewer than two timed runs.
  double localRatioAt(double atS) const;
  /// localRatioAt over `measurement`'s rounds: exp of the mean of log localRatioAt at each round's
  /// middle, weighted by its steps (Measurement::machineSlowdown). Empty where the rounds' moments
  /// were not recorded or fewer than two reference runs were timed.
  std::optional<double> localRatioWhile(const Measurement& measurement) const;
  /// What the sweep scales a measured candidate's predicted times by: (referenceRatio() x
  /// localRatioWhile(measurement), or 1 where empty) ^ share(), the ratio clamped to [0.5, 2].
  double factorFor(const Measurement& measurement) const;
  /// The same for a slowdown localRatioWhile already gave.
  double factorAtSlowdown(double slowdown) const;
};

/// The factor for `result`: drift.factorFor(its measurement) once it has one, else drift.factor().
double driftFactorOf(const CandidateResult& result, const CalibrationDrift& drift);

/// `base` (a prediction without drift) with every time multiplied by `factor`: iteration,
/// busy times, and samplesPerS recomputed for `batch`. Memory is left as it is.
Prediction driftedPrediction(Prediction base, double factor, std::int64_t batch);

/// {"factor": f, "reference_ratio": r, "share": s, "reference_noise": n or null, "references":
/// [{"chunks": m, "predicted_ns": p, "step_ns": [...]}], "timings": [...]} -- stored in the
/// report (docs/formats.md).
nlohmann::json toJson(const CalibrationDrift& drift);
/// Reads what toJson wrote (no drift for null or a missing key); the ratio, the share and the
/// factor are recomputed from the references and timings.
CalibrationDrift calibrationDriftFromJson(const nlohmann::json& json);

/// One line for the sweep's progress: the factor and what it means.
std::string describeCalibrationDrift(const CalibrationDrift& drift);

}  // namespace pipeprof::tuner
