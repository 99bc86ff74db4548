// The loss a pipeline step computes on its last stage, one micro-batch at a time.
#pragma once

#include <torch/torch.h>

#include <functional>

namespace pipeprof {

/// The loss of one micro-batch: the last stage's output and the target rows of that
/// micro-batch -> a scalar, mean-reduced over the micro-batch's samples.
using LossFn = std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& target)>;

}  // namespace pipeprof
