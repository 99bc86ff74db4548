// The sweep's predictions: the calibration, every candidate predicted through one Predictor, and the
// drift correction that the measuring rounds refine (tuner/calibration_drift.h).
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/predictor.h>
#include <pipeprof/tuner/calibration_drift.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/sweep.h>
#include <pipeprof/tuner/sweep_progress.h>

#include <filesystem>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// The profile and cluster the predictions start from, the calibration applied to them, and
/// the drift measured since.
struct CalibratedSetup {
  Profile profile;  ///< as profiled (a report written before calibration files: already calibrated)
  Cluster cluster;  ///< the sweep's devices (likewise)
  Calibration calibration;
  CalibrationDrift drift;
  /// Why the reference pipelines failed; empty when the calibration ran (or was resumed).
  std::string calibrationError;
  /// What a run costs beyond its steps (a fresh pipeline, its threads, tracing), from the
  /// calibration's reference runs: their mean seconds less their steps' (warm-up included, at
  /// their median). 0 when the references did not run here (a calibration file, a resume).
  double runSetupSeconds = 0.0;

  /// The one prediction of docs/simulator.md for these inputs.
  Predictor predictor() const { return Predictor(profile, cluster, calibration); }
  /// True when the reference pipelines ran, so the measuring rounds time them again.
  bool timesReferences() const { return calibrationError.empty() && !drift.predictedNs.empty(); }
  /// Stores the calibration, the drift and the error in the report.
  void storeIn(Report& report) const;
  /// The ops a candidate's pipeline runs on this model (its skips included): what names the
  /// spans of its measured and predicted traces.
  Schedule scheduleOf(const Candidate& candidate) const;
};

/// Calibrates the simulator with reference runs through `measurer`
/// (tuner/reference_calibration.h), or takes the calibration config.calibrationPath names,
/// and predicts each reference's step time for the drift correction. A resumed sweep keeps its
/// report's calibration and drift. When the references fail (e.g. the even-balance `never`
/// reference does not fit a device), the candidates are predicted from the raw profile and
/// can still be measured. Throws TrainingStopped when `stop` asks during a reference run.
CalibratedSetup calibrate(const SweepConfig& config, const SweepInputs& inputs, Profile profile,
                          CandidateMeasurer& measurer, SweepProgress& progress, const StopToken& stop = {});

/// A report holding every candidate of the search, predicted without drift: first those that
/// fit, best predicted throughput first (predictedRank 1, 2, ...), then those predicted not to
/// fit. Candidates the schedules cannot run (interleaved with chunks not a multiple of the
/// devices, more stages than layers) are left out: they have no prediction.
Report predictedReport(const SweepConfig& config, const CalibratedSetup& setup);

/// Every candidate's prediction as predictedReport made it (before drift), in report order.
std::vector<Prediction> predictionsOf(const Report& report);

/// Sets every candidate's prediction to its `base` one scaled by its drift factor (driftFactorOf:
/// a measured candidate's own, at the machine's speed during its rounds; the sweep's for the
/// others), keeping the trace path; keeps `base` as its predictionBeforeDrift, and stores the
/// calibration, drift included, in the report (a measured candidate's late-frees peaks kept).
/// Ranks (from `base`) do not change.
void applyDrift(Report& report, const std::vector<Prediction>& base, const CalibratedSetup& setup);

/// Predicts the twin trace of a measured candidate, scaled by its drift factor, writes it to
/// `tracesDir`, and records its path (relative to `reportDir`), analysis and step breakdown in
/// `result`, and its late-frees peaks (Prediction::latePeakBytes) in its prediction.
void writePredictedTwin(CandidateResult& result, const CalibratedSetup& setup, const std::filesystem::path& tracesDir,
                        const std::filesystem::path& reportDir);

/// The drift factor a measured candidate's predicted twin was scaled by (1 when it has none).
double twinDriftFactor(const CandidateResult& result);

}  // namespace pipeprof::tuner
