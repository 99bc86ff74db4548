// The layer profiler's step boundary (step_boundary.h).
#include "layer_profiling/step_boundary.h"

#include "layer_profiling/profiling_scopes.h"
#include "training/make_optimizer.h"

#include <algorithm>

namespace pipeprof::layer_profiling {

StepBoundary::StepBoundary(const Layers& layers, const OptimizerSpec& spec, const torch::Device& device)
    : device_(device) {
  for (std::size_t L = 0; L < layers.modules.size(); ++L) {
    if (!layers.runs(static_cast<std::int64_t>(L))) continue;  // no gradients: never stepped
    for (const torch::Tensor& p : layers.modules[L]->ptr()->parameters()) {
      const bool seen =
          std::any_of(parameters_.begin(), parameters_.end(), [&](const torch::Tensor& q) { return q.is_same(p); });
      if (p.requires_grad() && !seen) parameters_.push_back(p);
    }
  }
  if (parameters_.empty()) return;
  for (torch::Tensor& p : parameters_) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
  OptimizerSpec still = spec;
  still.learningRate = 0.0;
  optimizer_ = makeOptimizer(still, parameters_);
  end();
}

void StepBoundary::begin() const {
  for (const torch::Tensor& p : parameters_) {
    torch::Tensor grad = p.grad();
    if (grad.defined()) grad.zero_();
  }
}

void StepBoundary::end() const {
  if (optimizer_ == nullptr) return;
  optimizer_->step();
  synchronize(device_);
}

}  // namespace pipeprof::layer_profiling
