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

/// One optimizer stepping `trainable` alone on `device` (their gradients zeros): its first step
/// creates its state (optimizerStateCopies x the gradients), then the median time of `runs`
/// further steps and their transient peak above the state under tag L.
OptimizerStepCost measureOptimizerStep(const OptimizerSpec& spec, const std::vector<torch::Tensor>& trainable,
                                       std::int64_t runs, const TaggedStreams& streams, std::int64_t L,
                                       const torch::Device& device) {
  using Clock = std::chrono::steady_clock;
  const std::unique_ptr<torch::optim::Optimizer> optimizer = makeOptimizer(spec, trainable);
  {
    LayerMemoryScope scope(streams, L);
    optimizer->step();  // creates the state
    synchronize(device);
  }
  std::vector<TimeNs> times;
  Bytes transient = 0;
  for (std::int64_t r = 0; r < runs; ++r) {
    LayerMemoryScope scope(streams, L);
    const Bytes start = liveBytes(L);
    resetPeakBytes(L);
    const auto t0 = Clock::now();
    optimizer->step();
    synchronize(device);
    times.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    transient = std::max(transient, peakBytes(L) - start);
  }
  return {medianNs(times), transient};
}

}  // namespace

void measureOptimizer(torch::nn::Sequential& sequential, Profile& profile, const LayerProfilerOptions& options,
                      const TaggedStreams& streams, const torch::Device& device) {
  const Bytes copies = optimizerStateCopies(options.optimizer.kind);
  for (std::int64_t L = 0; L < profile.layerCount(); ++L) {
    LayerProfile& layer = profile.layers[static_cast<std::size_t>(L)];
    layer.optimizerBytes = copies * layer.gradBytes;
    std::vector<torch::Tensor> trainable;
    for (const torch::Tensor& p : sequential->ptr(L)->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    if (trainable.empty()) continue;
    for (torch::Tensor& p : trainable) p.mutable_grad() = torch::zeros_like(p);
    for (OptimizerKind kind : kOptimizerKinds) {
      layer.optimizerSteps[kind] =
          measureOptimizerStep(options.optimizer.asKind(kind), trainable, kOptimizerTimedSteps, streams, L, device);
    }
    const OptimizerStepCost own = layer.optimizerSteps[options.optimizer.kind];
    layer.optimizerStepNs = own.ns;
    layer.optimizerStepBytes = own.bytes;
    for (torch::Tensor& p : trainable) p.mutable_grad() = torch::Tensor();
  }
}

}  // namespace pipeprof::layer_profiling
