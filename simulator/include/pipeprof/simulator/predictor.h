// The one prediction every command makes: the simulator on a profile and cluster with a calibration applied.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include <map>
#include <string>

namespace pipeprof {

/// The cost model of docs/simulator.md: profile + cluster + calibration. `pipeprof simulate`,
/// `pipeprof suggest`, the sweep's report and the GUI's tuning panel and Suggest all predict
/// through a Predictor, so the same inputs give the same step time everywhere (the sweep then
/// scales its report's predictions by a drift factor it measured, and keeps both).
class Predictor {
 public:
  /// Applies the calibration once: calibratedProfile and calibratedCluster, with its own
  /// corrections and with each shape's of Calibration::byShape.
  Predictor(Profile profile, Cluster cluster, Calibration calibration = {});

  /// Calibrated with the calibration's own corrections (every shape without its own); the
  /// layers and devices of every shape's inputs.
  const Profile& profile() const { return base_.profile; }
  const Cluster& cluster() const { return base_.cluster; }
  const Calibration& calibration() const { return calibration_; }

  /// simulate() on the calibrated inputs of the candidate's shape (Calibration::correctionsFor);
  /// a training step also pays that shape's step overhead for its chunk count (iterationNs, samplesPerS recomputed;
  /// busy times unchanged) and, with recordTrace, shows it as a host span "calibration (step
  /// overhead)" after the last event. Throws what simulate() throws.
  SimulationResult predict(const Candidate& candidate, const SimulationOptions& options = {}) const;

  /// search() with every shape on its calibrated inputs, every simulated prediction with its
  /// shape's step overhead, the fitting ones ranked again by predicted throughput (ties keep
  /// search()'s order). Throws what search() throws.
  SearchResult search(const SearchSpace& space, const SearchProgress& progress = {}) const;

 private:
  /// One shape's calibrated inputs and the corrections they were made with.
  struct CalibratedInputs {
    Profile profile;
    Cluster cluster;
    ScheduleCorrections corrections;
  };
  /// (profile, cluster) calibrated with `calibration`'s own corrections and message latency.
  static CalibratedInputs calibrated(const Profile& profile, const Cluster& cluster, const Calibration& calibration);
  /// byShape_ at `shape` where it has a loss cold start of its own, else at
  /// Calibration::correctingShape(shape), else base_: the inputs of
  /// Calibration::forShape(shape), whose cold start follows the corrections' shape.
  const CalibratedInputs& inputsFor(const ReferenceShape& shape) const;

  Calibration calibration_;
  CalibratedInputs base_;
  std::map<ReferenceShape, CalibratedInputs> byShape_;
};

/// Adds `overheadNs` to a prediction's step: iterationNs += overheadNs, samplesPerS recomputed
/// for `batch` samples.
void addStepOverhead(Prediction& prediction, TimeNs overheadNs, std::int64_t batch);

/// Appends a host span "calibration (step overhead)" of `overheadNs` (phase optimizer) after
/// the last event of a predicted trace, so the trace is as long as the predicted step.
void appendStepOverheadSpan(Trace& trace, TimeNs overheadNs);

}  // namespace pipeprof
