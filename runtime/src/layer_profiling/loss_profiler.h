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
  std::int64_t warmupRuns = 2;
  std::int64_t runs = 5;  ///< timed runs (medians kept)
};

struct LossSample {
  CostSample cost;          ///< a LossProfile sample (profile.h says what each field holds)
  bool keepsOutput = true;  ///< LossProfile::keepsOutput
};

/// The loss of `output` (the last layer's, at one micro-batch size) against `target`, as the
/// last stage computes it: under autocast to the precision, on an output that is no leaf (so
/// autocast caches no copy of it, and the graph alone decides how long it lives), weighed as a
/// stage weighs it, its backward paused. Measures what the graph keeps and the forward's
/// transient, whether the graph keeps the output, the backward's peak above its start (the
/// output's gradient included), and both passes' median time.
LossSample measureLoss(const Model& model, const torch::Tensor& output, const torch::Tensor& target,
                       const LossMeasurement& how);

}  // namespace pipeprof
