// The sweep's predictions: the calibrated simulator inputs, every candidate predicted, and the
// drift correction that the measuring rounds refine (cli/calibration_drift.h).
#pragma once

#include "calibration_drift.h"
#include "chained_calibration.h"
#include "progress_reporter.h"
#include "sweep_runner.h"

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// The profile and cluster the predictions use, the calibration that made them, and the drift
/// measured since.
struct CalibratedSetup {
  Profile profile;
  Cluster cluster;
  ChainedCalibration chained;
  CalibrationDrift drift;
  /// Why the reference pipelines failed; empty when the calibration ran (or was resumed).
  std::string calibrationError;

  /// True when the reference pipelines ran, so the measuring rounds time them again.
  bool timesReferences() const { return calibrationError.empty() && !drift.predictedNs.empty(); }
  /// The report's "calibration": {"chained": ..., "drift": ...} or {"error": ...}.
  nlohmann::json json() const;
};

/// Calibrates the simulator with reference runs (cli/chained_calibration.h) and predicts each
/// reference's step time for the drift correction. A resumed sweep keeps its report's
/// calibration and drift: its embedded profile is the calibrated one. When the references fail
/// (e.g. the even-balance `never` reference does not fit a device), the candidates are
/// predicted from the raw profile and can still be measured.
CalibratedSetup calibrate(const SweepConfig& config, const SweepInputs& inputs, Profile profile,
                          ProgressReporter& progress);

/// A report holding every candidate of the search, predicted without drift: first those that
/// fit, best predicted throughput first (predictedRank 1, 2, ...), then those predicted not to
/// fit. Each prediction carries the calibrated step overhead of its chunk count. Candidates the
/// schedules cannot run (interleaved with chunks not a multiple of the devices, more stages
/// than layers) are left out: they have no prediction.
Report predictedReport(const SweepConfig& config, const CalibratedSetup& setup);

/// Every candidate's prediction as predictedReport made it (before drift), in report order.
std::vector<Prediction> predictionsOf(const Report& report);

/// Sets every candidate's prediction to its `base` one scaled by the drift factor (keeping the
/// trace path) and stores the calibration, drift included, in the report. Ranks do not change.
void applyDrift(Report& report, const std::vector<Prediction>& base, const CalibratedSetup& setup);

/// Simulates the predicted twin of a measured candidate, scaled by the drift, writes it to
/// `tracesDir`, and records its path (relative to `reportDir`) and analysis in `result`.
/// `base` is the candidate's prediction before drift (its step overhead is the difference).
void writePredictedTwin(CandidateResult& result, const Prediction& base, const CalibratedSetup& setup,
                        const std::filesystem::path& tracesDir, const std::filesystem::path& reportDir);

/// The drift factor a measured candidate's predicted twin was scaled by (1 when it has none).
double twinDriftFactor(const CandidateResult& result);

}  // namespace pipeprof::cli
