// The measured training loop behind `pipeprof run` and the sweep: warm-up, timed steps, peaks, trace.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/profiler/activity_source.h>
#include <pipeprof/runtime/grad_scaler.h>
#include <pipeprof/runtime/models.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof {

/// The shape trained (the balance has p * v entries), where, on what batch and for how long.
struct TrainingOptions : PipelineShape {
  std::vector<torch::Device> devices;  ///< one per pipeline device (p); stage j on devices[deviceOfStage(j)]
  std::int64_t batch = 1;
  std::int64_t warmupSteps = 2;
  std::int64_t steps = 10;
  OptimizerSpec optimizer;                ///< default: plain SGD, lr 1e-3 (no optimizer state)
  Precision precision = Precision::Fp32;  ///< bf16/fp16: the forward under autocast (fp16: CUDA only)
  /// Dynamic loss scaling (grad_scaler.h): fp16 uses it with PyTorch's defaults when this is
  /// unset; set, it runs at any precision with these options.
  std::optional<GradScalerOptions> gradScaler;
  std::int64_t dataSeed = 0;               ///< seed of the synthetic batch
  bool captureTrace = false;               ///< record host spans, memory counters (and CUPTI events on CUDA)
  CuptiMode cuptiMode = CuptiMode::Cheap;  ///< what CUPTI records when captureTrace on CUDA
  /// Asked after every step (warm-up and measured); a stop request ends the loop there by
  /// throwing TrainingStopped (the sweep's Ctrl-C). Default: never stop.
  StopToken stop;
};

/// Thrown by the training loops when TrainingOptions::stop asked them to stop after a step.
class TrainingStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainingResult {
  Measurement measurement;  ///< tracePath left empty: the caller writes the trace; peaks per pipeline device
  /// The mini-batch loss of every step, warm-up steps first, in order.
  std::vector<double> losses;
  Trace trace;  ///< empty unless captureTrace
  /// CUDA devices only: the caching allocator's whole-device peak (Pipe::devicePeakBytes),
  /// the largest over the measured steps, by device name ("cuda:0").
  std::map<std::string, Bytes> devicePeakBytes;
  /// One line about device-side capture: the CUPTI summary, or why it was unavailable, or
  /// empty when every device is a CPU.
  std::string collectorNote;
};

/// Trains `model` (moved into a Pipe with the options' schedule) for warmupSteps + steps steps
/// of options.optimizer on one synthetic batch: each step is Pipe::step (forward, the model's
/// loss per micro-batch on the last stage, backward, in schedule order) and an optimizer step, timed
/// with a steady clock (CUDA devices synchronised before the clock is read). Gradients are
/// zeroed in place, not freed, so they stay allocated between steps as the memory model
/// assumes. Per-pipeline-device peak bytes are the largest Pipe::peakBytes() over the measured
/// steps. Every schedule and balance computes the same gradients, so with the same model seed
/// and batch the losses agree up to float rounding.
///
/// With captureTrace the trace holds host spans "warmup" and "step" (device "host", lane
/// "host") and "optimizer" (lane "optimizer"), the Pipe's op spans and memory counters, and on CUDA the CUPTI kernels
/// and copies attributed to the ops.
///
/// Throws std::invalid_argument for a bad balance/chunks/devices combination (from the Pipe),
/// non-positive steps, batch or chunks > batch, an optimizer hyperparameter out of range, or
/// fp16 on a CPU device;
/// TrainingStopped when options.stop asks.
TrainingResult trainAndMeasure(Model& model, const TrainingOptions& options);

}  // namespace pipeprof
