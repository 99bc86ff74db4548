// LibTorch's optimizer for an OptimizerSpec: what the training loops and the layer profiler step.
#pragma once

#include <pipeprof/core/optimizer.h>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace pipeprof {

/// LibTorch's optimizer of `spec` over `parameters` (SGD, SGD with momentum, Adam, AdamW with
/// the spec's hyperparameters); its state is created at its first step.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const OptimizerSpec& spec,
                                                       const std::vector<torch::Tensor>& parameters);

}  // namespace pipeprof
