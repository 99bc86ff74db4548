// What ends a training step and begins the next, around each of the layer profiler's timed passes.
#pragma once

#include "layer_profiling/layer_runs.h"

#include <pipeprof/core/optimizer.h>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace pipeprof::layer_profiling {

/// The gradients zeroed in place as a step begins, and the profile's optimizer stepping the
/// layers' trainable parameters as it ends (once at construction too, which creates its state):
/// a timed pass between the two finds what a step's first micro-batch finds after the step
/// before. The loss, a call bound by dispatch and allocation, ran up to 1.8x longer as a step's
/// first call after AdamW's step than after a pass's backward (docs/profiler.md, "After the
/// optimizer's step"). The step's learning rate is 0: the same kernels over the same memory, the
/// weights left as they are, since a profile that trained them ran unet's forwards 12% shorter
/// and the LM's loss 1.6x longer than at the weights a sweep's runs start from.
class StepBoundary {
 public:
  /// Over the trainable parameters of the layers the passes run (each tensor once: tied weights),
  /// a missing gradient made zeros; the device is synchronised after each step.
  StepBoundary(const Layers& layers, const OptimizerSpec& spec, const torch::Device& device);

  /// As a step begins: every gradient zeroed in place.
  void begin() const;
  /// As a step ends: the optimizer's step, finished.
  void end() const;

  /// The optimizer stepped (null without trainable parameters).
  const torch::optim::Optimizer* optimizer() const { return optimizer_.get(); }

 private:
  torch::Device device_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace pipeprof::layer_profiling
