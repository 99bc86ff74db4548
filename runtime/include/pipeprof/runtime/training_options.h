// What a training loop runs: the pipeline's shape, its devices, the batch, the steps and the training step.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/profiler/activity_source.h>
#include <pipeprof/runtime/grad_scaler.h>

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace pipeprof {

class CuptiCollector;

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
  std::int64_t dataSeed = 0;  ///< seed of the synthetic batch
  /// PipeOptions::workerCpus: each pipeline device's worker on CPUs of its own (`--cpu-bind
  /// cores`); empty: where the scheduler puts them.
  std::vector<std::vector<int>> workerCpus;
  bool captureTrace = false;               ///< record host spans, memory counters (and CUPTI events on CUDA)
  CuptiMode cuptiMode = CuptiMode::Cheap;  ///< what CUPTI records when captureTrace on CUDA
  /// With captureTrace: a collector kept across runs (the threaded measurer's), which the run
  /// captures with and leaves paused, recording, so a series of traced runs enables CUPTI once
  /// (profiler/cupti_collector.h). Null: on CUDA a collector of the run's own (cuptiMode),
  /// enabled and stopped around it.
  CuptiCollector* collector = nullptr;
  /// Asked after every step (warm-up and measured); a stop request ends the loop there by
  /// throwing TrainingStopped (the sweep's Ctrl-C). Default: never stop.
  StopToken stop;
};

/// Thrown by the training loops when TrainingOptions::stop asked them to stop after a step.
class TrainingStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipeprof
