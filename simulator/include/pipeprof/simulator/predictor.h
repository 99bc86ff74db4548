// The one prediction every command makes: the simulator on a profile and cluster with a calibration applied.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

namespace pipeprof {

/// The cost model of docs/simulator.md: profile + cluster + calibration. `pipeprof simulate`,
/// `pipeprof suggest`, the sweep's report and the GUI's tuning panel and Suggest all predict
/// through a Predictor, so the same inputs give the same step time everywhere (the sweep then
/// scales its report's predictions by a drift factor it measured, and keeps both).
class Predictor {
 public:
  /// Applies the calibration once: calibratedProfile and calibratedCluster.
  Predictor(Profile profile, Cluster cluster, Calibration calibration = {});

  const Profile& profile() const { return profile_; }  ///< calibrated
  const Cluster& cluster() const { return cluster_; }  ///< calibrated
  const Calibration& calibration() const { return calibration_; }

  /// simulate() on the calibrated inputs; a training step also pays the calibration's step
  /// overhead for its chunk count (iterationNs, samplesPerS recomputed; busy times unchanged)
  /// and, with recordTrace, shows it as a host span "calibration (step overhead)" after the
  /// last event. Throws what simulate() throws.
  SimulationResult predict(const Candidate& candidate, const SimulationOptions& options = {}) const;

  /// search() on the calibrated inputs, every simulated prediction with its step overhead, the
  /// fitting ones ranked again by predicted throughput (ties keep search()'s order). Throws
  /// what search() throws.
  SearchResult search(const SearchSpace& space, const SearchProgress& progress = {}) const;

 private:
  Profile profile_;
  Cluster cluster_;
  Calibration calibration_;
};

/// Adds `overheadNs` to a prediction's step: iterationNs += overheadNs, samplesPerS recomputed
/// for `batch` samples.
void addStepOverhead(Prediction& prediction, TimeNs overheadNs, std::int64_t batch);

/// Appends a host span "calibration (step overhead)" of `overheadNs` (phase optimizer) after
/// the last event of a predicted trace, so the trace is as long as the predicted step.
void appendStepOverheadSpan(Trace& trace, TimeNs overheadNs);

}  // namespace pipeprof
