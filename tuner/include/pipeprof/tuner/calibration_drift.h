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
//   factor = sqrt(ratio)
//
// and the sweep multiplies every predicted time by the factor. The ratio is partly noise: the
// references sample other moments of the machine's wandering speed than the candidates do, and
// each of the calibration's shapes was timed at its own moment. Over 64 sweeps of the 2-core
// development machine (2026-11-26..28, docs/notes/accuracy-history.md, bench/drift_shrinkage.py) applying
// the whole ratio left a mean step MAPE of 7.9% and 16 sweeps past 10%, none 7.4% and 11, half of
// it in log terms (the square root) 6.9% and 10; a quarter or a half did best in every random
// half of the sweeps, and beat both the whole ratio and none there. One factor for all candidates
// keeps their predicted order exactly: it corrects the offset, never the ranking.
#pragma once

#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <vector>

namespace pipeprof::tuner {

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
  /// What the sweep scales every predicted time by: the square root of referenceRatio().
  double factor() const;
};

/// `base` (a prediction without drift) with every time multiplied by `factor`: iteration,
/// busy times, and samplesPerS recomputed for `batch`. Memory is left as it is.
Prediction driftedPrediction(Prediction base, double factor, std::int64_t batch);

/// {"factor": f, "reference_ratio": r, "references": [{"chunks": m, "predicted_ns": p,
/// "step_ns": [...]}]} -- stored in the report's calibration (docs/formats.md).
nlohmann::json toJson(const CalibrationDrift& drift);
/// Reads what toJson wrote (no drift for null or a missing key); the ratio and the factor are
/// recomputed from the references.
CalibrationDrift calibrationDriftFromJson(const nlohmann::json& json);

/// One line for the sweep's progress: the factor and what it means.
std::string describeCalibrationDrift(const CalibrationDrift& drift);

}  // namespace pipeprof::tuner
