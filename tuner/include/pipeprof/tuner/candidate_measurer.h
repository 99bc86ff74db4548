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
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/models.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// What every step of a measured run trains with beyond the candidate's shape.
struct TrainingStepOptions {
  OptimizerSpec optimizer;  ///< default: plain SGD
  Precision precision = Precision::Fp32;
  /// Cores: each pipeline device on its share of the CPUs this process may use
  /// (launch::cpuShare): a rank process, or a device's worker thread (PipeOptions::workerCpus).
  /// None: where the scheduler puts them. Unset: the layout's default, ranks bound and threads
  /// not (`--cpu-bind`).
  std::optional<launch::CpuBinding> cpuBinding;
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

/// Makes the CUPTI collector that traced runs on `devices` share (its tracer is replaced by
/// each run's); null where nothing would record.
using CollectorFactory =
    std::function<std::unique_ptr<CuptiCollector>(HostTracer& tracer, const std::vector<DeviceDesc>& devices)>;

/// The default: a cheap-mode CUPTI collector when a device is CUDA, else null.
std::unique_ptr<CuptiCollector> cuptiOnCuda(HostTracer& tracer, const std::vector<DeviceDesc>& devices);

/// Runs candidates as threads of this process: a fresh model from `model` and a Pipe over
/// `devices` (the sweep's devices; a candidate's pipeline device d runs on devices[deviceOf(d)])
/// trained by the training loop of runtime/training_loop.h.
///
/// Everything the runs share is paid once per measurer, not per run: CUDA's start and the
/// caching allocator's blocks (one process, nothing emptied between runs), and, over a series
/// of traced runs (the calibration's references, a sweep's last round), CUPTI's enabling: one
/// collector (`collectors`) records from the first traced run of the series to the next
/// untraced run, which it does not slow (profiler/cupti_collector.h, pause()).
class ThreadedMeasurer : public CandidateMeasurer {
 public:
  ThreadedMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, TrainingStepOptions step = {},
                   CollectorFactory collectors = cuptiOnCuda);
  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override;

 private:
  /// The collector a traced run captures with, made at the first traced run; null where none
  /// records.
  CuptiCollector* keptCollector();

  ModelSpec model_;
  std::vector<DeviceDesc> devices_;
  TrainingStepOptions step_;
  CollectorFactory makeCollector_;
  HostTracer collectorTracer_;  ///< the kept collector's tracer until a run gives it its own
  std::unique_ptr<CuptiCollector> collector_;
  bool collectorMade_ = false;
};

}  // namespace pipeprof::tuner
