// The layer profiler's optimizer pass: each layer's optimizer state, step time and step transient.
#pragma once

#include "memory/device_memory.h"

#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/layer_profiler_options.h>

#include <torch/torch.h>

namespace pipeprof::layer_profiling {

/// Timed steps per layer and optimizer kind: a step is a small part of a training step's time.
inline constexpr std::int64_t kOptimizerTimedSteps = 5;

/// Per layer with trainable parameters, every optimizer kind stepping them alone on `device`
/// (their gradients zeros; the profile's hyperparameters where they apply): its first step
/// creates the state (exactly optimizerStateCopies x the gradients), then the median time of
/// kOptimizerTimedSteps further steps and their transient peak above the state under the layer's
/// tag. Fills optimizerSteps, and the profile's own kind's as optimizer_step_ns and
/// optimizer_step_bytes, with its state as optimizer_bytes. Changes the parameters (the
/// caller's snapshot restores them) and leaves their gradients undefined.
void measureOptimizer(torch::nn::Sequential& sequential, Profile& profile, const LayerProfilerOptions& options,
                      const TaggedStreams& streams, const torch::Device& device);

}  // namespace pipeprof::layer_profiling
