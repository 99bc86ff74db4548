// The layer profiler's memory pass: each layer's output, saved bytes, workspaces and cast copies.
#pragma once

#include "layer_profiling/layer_runs.h"
#include "layer_profiling/profiler_skip_tracker.h"
#include "layer_profiling/time_samples.h"
#include "memory/device_memory.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/profile.h>

#include <torch/torch.h>

#include <vector>

namespace pipeprof::layer_profiling {

/// Memory fields of every layer at one size (the input's rows), into `costs`, on `device` (the
/// input's): on CPU with the tracked allocator, on CUDA with the caching allocator's blocks on
/// each layer's stream (layer_profiler.cpp's overview, passes 1 to 4). `skips` records what each
/// stash holds and what of it the graph does not save; under bf16/fp16 `castCacheBytes` gets
/// each layer's cast copies. `modelOutput` gets an untagged copy of the last layer's output
/// (undefined when it returns several tensors), for the loss profiler.
///
/// Passes 3 and 4 run every layer's forward and backward, whole and then split, as a timed pass
/// does: with `times`, they are timed too (outside what they measure), one whole and one split
/// run of each layer (of a layer that pops a skip its forward alone: TimeSamples::popsASkip);
/// not the loss, which measureTimes times after an optimizer's step.
void measureMemory(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, ProfilerSkipTracker& skips,
                   const TaggedStreams& streams, const torch::Device& device, Precision precision,
                   std::vector<Bytes>& castCacheBytes, torch::Tensor& modelOutput, TimeSamples* times);

}  // namespace pipeprof::layer_profiling
