// How the sweep runs a candidate for real: an interface, and the threaded Pipe of this process behind it.
//
// The sweep (tuner/sweep.h) and the calibration (tuner/reference_calibration.h) never build a
// pipeline themselves: they hand a candidate to a CandidateMeasurer and get its timed steps,
// peaks and trace back. ThreadedMeasurer trains a Pipe whose stages are threads of this
// process; ProcessMeasurer (tuner/process_measurer.h) one process per pipeline device.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/device.h>
#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/runtime/models.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// What every step of a measured run trains with beyond the candidate's shape.
struct TrainingStepOptions {
  OptimizerSpec optimizer;  ///< default: plain SGD
  Precision precision = Precision::Fp32;
};

/// One run of a candidate.
struct MeasureRequest {
  std::int64_t warmupSteps = 1;  ///< untimed steps first
  std::int64_t steps = 1;        ///< timed steps
  bool traced = false;           ///< record the trace (op spans, memory counters, kernels on CUDA)
  /// Asked after every step; a stop request ends the run by throwing TrainingStopped. Default:
  /// never.
  StopToken stop;
};

/// What one run measured.
struct MeasuredRun {
  Measurement measurement;  ///< its timed steps and per-pipeline-device peaks (no trace path)
  Trace trace;              ///< empty unless traced
};

class CandidateMeasurer {
 public:
  virtual ~CandidateMeasurer() = default;
  /// Trains `candidate` on a fresh model (pipeline device d on the candidate's device d) as
  /// `request` says. Throws TrainingStopped (runtime/training_loop.h) when request.stop asks,
  /// and what the run throws when it fails (std::invalid_argument for a candidate the runtime
  /// refuses, std::runtime_error and others for a failure while training).
  virtual MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) = 0;
};

/// Runs candidates as threads of this process: a fresh model from `model` and a Pipe over
/// `devices` (the sweep's devices; a candidate's pipeline device d runs on devices[deviceOf(d)])
/// trained by the training loop of runtime/training_loop.h.
class ThreadedMeasurer : public CandidateMeasurer {
 public:
  ThreadedMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, TrainingStepOptions step = {});
  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override;

 private:
  ModelSpec model_;
  std::vector<DeviceDesc> devices_;
  TrainingStepOptions step_;
};

}  // namespace pipeprof::tuner
