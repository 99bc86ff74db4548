// The layer profiler's optimizer pass: each layer's optimizer state, step time and step transient.
#pragma once

#include "memory/device_memory.h"

#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/layer_profiler_options.h>

#include <torch/torch.h>

#include <cstdint>

namespace pipeprof::layer_profiling {

/// Timed steps per layer and optimizer kind: a step is a small part of a training step's time.
inline constexpr std::int64_t kOptimizerTimedSteps = 5;
/// What a pass of timed steps writes first, to leave the caches as a training step's forward
/// and backward do: twice the development machine's last-level cache (32 MiB), past an H100's
/// L2 (50 MiB).
inline constexpr std::int64_t kCacheEvictionBytes = std::int64_t{64} << 20;

/// Per layer with trainable parameters, every optimizer kind stepping them on `device` (their
/// gradients zeros; the profile's hyperparameters where they apply): its first step creates the
/// state (exactly optimizerStateCopies x the gradients); then kOptimizerTimedSteps passes, each
/// after writing kCacheEvictionBytes, step every layer in order, as a device steps its stages'
/// parameters after its backward (docs/profiler.md, "The optimizer step"): the median time and
/// the transient peak above the state under the layer's tag. Every layer's state of one kind
/// is held at once. Fills optimizerSteps, and the profile's own kind's as optimizer_step_ns and
/// optimizer_step_bytes, with its state as optimizer_bytes; on CPU with the cores for two
/// devices or more, optimizerAtOnce (optimizerDevicesAtOnce). Changes the parameters (the
/// caller's snapshot restores them) and leaves their gradients undefined.
void measureOptimizer(torch::nn::Sequential& sequential, Profile& profile, const LayerProfilerOptions& options,
                      const TaggedStreams& streams, const torch::Device& device);

/// How many pipeline devices of this host step their optimizers at once at this thread count:
/// on CPU the cores over the intra-op threads (the sweep gives each of p devices cores / p
/// threads, so p), at least 1; 1 on CUDA, whose devices step in memories of their own. Where it
/// is 2 or more, measureOptimizer also measures Profile::optimizerAtOnce for every optimizer
/// kind, with that many threads each stepping a contiguous share of the layers of about equal
/// parameter bytes.
std::int64_t optimizerDevicesAtOnce(const torch::Device& device);

}  // namespace pipeprof::layer_profiling
