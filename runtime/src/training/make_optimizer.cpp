// LibTorch's optimizer for an OptimizerSpec.
#include "training/make_optimizer.h"

#include <stdexcept>

namespace pipeprof {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const OptimizerSpec& spec,
                                                       const std::vector<torch::Tensor>& parameters) {
  const double decay = spec.effectiveWeightDecay();
  switch (spec.kind) {
    case OptimizerKind::Sgd:
      return std::make_unique<torch::optim::SGD>(parameters,
                                                 torch::optim::SGDOptions(spec.learningRate).weight_decay(decay));
    case OptimizerKind::Momentum:
      return std::make_unique<torch::optim::SGD>(
          parameters, torch::optim::SGDOptions(spec.learningRate).momentum(spec.momentum).weight_decay(decay));
    case OptimizerKind::Adam:
      return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(spec.learningRate)
                                                                  .betas(std::make_tuple(spec.beta1, spec.beta2))
                                                                  .eps(spec.eps)
                                                                  .weight_decay(decay));
    case OptimizerKind::AdamW:
      return std::make_unique<torch::optim::AdamW>(parameters, torch::optim::AdamWOptions(spec.learningRate)
                                                                   .betas(std::make_tuple(spec.beta1, spec.beta2))
                                                                   .eps(spec.eps)
                                                                   .weight_decay(decay));
  }
  throw std::invalid_argument("unknown optimizer kind");
}

}  // namespace pipeprof
