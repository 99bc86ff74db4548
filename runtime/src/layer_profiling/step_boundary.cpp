// The layer profiler's step boundary (step_boundary.h).
#include "layer_profiling/step_boundary.h"

#include "layer_profiling/profiling_scopes.h"
#include "training/make_optimizer.h"
#include "training/training_steps.h"

#include <unordered_set>

namespace pipeprof::layer_profiling {

StepBoundary::StepBoundary(const Layers& layers, const OptimizerSpec& spec, const torch::Device& device)
    : device_(device) {
  std::unordered_set<const void*> seen;  // tied weights: each tensor once
  for (std::size_t L = 0; L < layers.modules.size(); ++L) {
    if (!layers.runs(static_cast<std::int64_t>(L))) continue;  // no gradients: never stepped
    for (const torch::Tensor& p : layers.modules[L]->ptr()->parameters()) {
      if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) parameters_.push_back(p);
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

void StepBoundary::begin() const { zeroGradientsInPlace(parameters_); }

void StepBoundary::end() const {
  if (optimizer_ == nullptr) return;
  optimizer_->step();
  synchronize(device_);
}

}  // namespace pipeprof::layer_profiling
