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
#include <pipeprof/runtime/model.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/training_options.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof {

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
