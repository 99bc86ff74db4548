// The loss profiler: the model's loss on the last layer's output, measured like a layer.
#pragma once

#include "memory/device_memory.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/model.h>

#include <torch/torch.h>

#include <cstdint>

namespace pipeprof {

struct LossMeasurement {
  torch::Device device = torch::kCPU;  ///< where output and target live
  Precision precision = Precision::Fp32;
  const TaggedStreams* streams = nullptr;  ///< CUDA: stream `tag` counts the loss's blocks
  std::int64_t tag = 0;                    ///< the memory-tracker tag the loss is measured under
};

struct LossSample {
  CostSample cost;          ///< a LossProfile sample (profile.h says what each field holds); no times
  bool keepsOutput = true;  ///< LossProfile::keepsOutput
};

/// The loss of `output` (the last layer's, at one micro-batch size) against `target`, as the
/// last stage computes it: under autocast to the precision, on an output that is no leaf (so
/// autocast caches no copy of it, and the graph alone decides how long it lives), weighed as a
/// stage weighs it, its backward paused. Measures what the graph keeps and the forward's
/// transient, whether the graph keeps the output, and the backward's peak above its start (the
/// output's gradient included). Its times come from timeLoss, in the layers' timed passes.
LossSample measureLossMemory(const Model& model, const torch::Tensor& output, const torch::Tensor& target,
                             const LossMeasurement& how);

struct LossTime {
  TimeNs forwardNs = 0;
  TimeNs backwardNs = 0;  ///< to the output's gradient, not further
};

/// One run of the loss of `output` against `target` as the last stage runs it (weighed, on a
/// view of the output, its backward paused), under the caller's autocast: the forward's time
/// and the backward's to the output's gradient. The layer profiler calls it right after the
/// last layer's forward, where the pipeline runs it: timed alone in a loop of its own, the
/// loss read 4.5-7x less than the same loss in a pipeline (docs/simulator.md, "The loss"); and
/// in passes of its own that each follow an optimizer's step and an idle of the device, as a
/// step's first loss call follows the step before and the last stage's wait (docs/profiler.md,
/// "After the optimizer's step", "After the last stage's wait").
LossTime timeLoss(const Model& model, const torch::Tensor& output, const torch::Tensor& target,
                  const torch::Device& device, Precision precision);

}  // namespace pipeprof
