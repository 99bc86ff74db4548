// The layer profiler's optimizer pass (optimizer_profiler.h).
#include "layer_profiling/optimizer_profiler.h"

#include "layer_profiling/profiling_scopes.h"
#include "training/make_optimizer.h"

#include <pipeprof/core/statistics.h>
#include <pipeprof/runtime/memory_tracker.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

namespace pipeprof::layer_profiling {

namespace {

/// A layer's optimizer of one kind, and what its timed steps measured.
struct LayerStepper {
  std::int64_t layer = 0;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<TimeNs> times;
  Bytes transient = 0;
};

/// Writes a buffer larger than the CPU's last-level cache (and a GPU's L2) on `device`: what a
/// training step's forward and backward leave there before its optimizer step.
void evictCaches(torch::Tensor& buffer) { buffer.fill_(1); }

/// Every layer's optimizer of one kind (their gradients zeros): each layer's first step creates
/// its state (optimizerStateCopies x the gradients); then `runs` passes, each after evicting the
/// caches, step the layers in order, as a device steps its stages' parameters after its backward:
/// each layer's median time and its transient peak above the state under its tag.
std::vector<LayerStepper> measureOptimizerSteps(const OptimizerSpec& spec,
                                                const std::vector<std::vector<torch::Tensor>>& trainable,
                                                std::int64_t runs, const TaggedStreams& streams,
                                                const torch::Device& device, torch::Tensor& evictionBuffer) {
  std::vector<LayerStepper> steppers;
  for (std::size_t L = 0; L < trainable.size(); ++L) {
    if (trainable[L].empty()) continue;
    LayerStepper stepper;
    stepper.layer = static_cast<std::int64_t>(L);
    stepper.optimizer = makeOptimizer(spec, trainable[L]);
    LayerMemoryScope scope(streams, stepper.layer);
    stepper.optimizer->step();  // creates the state
    synchronize(device);
    steppers.push_back(std::move(stepper));
  }
  using Clock = std::chrono::steady_clock;
  for (std::int64_t r = 0; r < runs; ++r) {
    evictCaches(evictionBuffer);
    synchronize(device);
    for (LayerStepper& stepper : steppers) {
      LayerMemoryScope scope(streams, stepper.layer);
      const Bytes start = liveBytes(stepper.layer);
      resetPeakBytes(stepper.layer);
      const auto t0 = Clock::now();
      stepper.optimizer->step();
      synchronize(device);
      stepper.times.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
      stepper.transient = std::max(stepper.transient, peakBytes(stepper.layer) - start);
    }
  }
  return steppers;
}

}  // namespace

void measureOptimizer(torch::nn::Sequential& sequential, Profile& profile, const LayerProfilerOptions& options,
                      const TaggedStreams& streams, const torch::Device& device) {
  const Bytes copies = optimizerStateCopies(options.optimizer.kind);
  std::vector<std::vector<torch::Tensor>> trainable(static_cast<std::size_t>(profile.layerCount()));
  for (std::int64_t L = 0; L < profile.layerCount(); ++L) {
    LayerProfile& layer = profile.layers[static_cast<std::size_t>(L)];
    layer.optimizerBytes = copies * layer.gradBytes;
    for (const torch::Tensor& p : sequential->ptr(L)->parameters()) {
      if (p.requires_grad()) trainable[static_cast<std::size_t>(L)].push_back(p);
    }
  }
  for (auto& parameters : trainable) {
    for (torch::Tensor& p : parameters) p.mutable_grad() = torch::zeros_like(p);
  }
  torch::Tensor evictionBuffer =
      torch::empty({kCacheEvictionBytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  for (OptimizerKind kind : kOptimizerKinds) {
    for (const LayerStepper& stepper : measureOptimizerSteps(options.optimizer.asKind(kind), trainable,
                                                             kOptimizerTimedSteps, streams, device, evictionBuffer)) {
      profile.layers[static_cast<std::size_t>(stepper.layer)].optimizerSteps[kind] =
          OptimizerStepCost{medianNs(stepper.times), stepper.transient};
    }
  }
  for (LayerProfile& layer : profile.layers) {
    const auto own = layer.optimizerSteps.find(options.optimizer.kind);
    if (own == layer.optimizerSteps.end()) continue;
    layer.optimizerStepNs = own->second.ns;
    layer.optimizerStepBytes = own->second.bytes;
  }
  for (auto& parameters : trainable) {
    for (torch::Tensor& p : parameters) p.mutable_grad() = torch::Tensor();
  }
}

}  // namespace pipeprof::layer_profiling
