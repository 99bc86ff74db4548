// Layers that run alike: where the profile's budget cannot run every layer at every size, a layer
// identical to an earlier one takes that layer's figures instead of being run again.
//
//   gpt --depth 64:  embed  block0  block1 ... block63  norm  head
//   sameAs:          0      1       1     ...  1        65    66
//
// Two layers are identical when their module trees print alike (class and options of every
// submodule), their parameters and buffers have the same shapes, types and trainability, and they
// get inputs of the same shapes and types and give outputs of those shapes again, so that leaving
// one out of a pass hands the next layer an input of the shape it expects. Never shared: the first
// layer (its input needs no gradient, so its backward differs), the last (the loss runs after
// it), a layer that stashes or pops a skip or holds a parameter another layer holds, and a layer
// whose tree holds a module that prints nothing of what it computes (a Functional, a graph or
// scripted layer).
#pragma once

#include "layer_profiling/layer_runs.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/profile.h>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof::layer_profiling {

struct IdenticalLayers {
  /// Per layer, the earliest identical layer (itself when none is earlier).
  std::vector<std::int64_t> sameAs;
  /// The forward of every layer on the input, without gradients: what it took.
  double forwardSeconds = 0.0;

  /// The layers that take an earlier layer's figures.
  std::int64_t copies() const;
};

/// Finds the identical layers by running every layer's forward once on `input` (no gradients,
/// under autocast at `precision`), skips through a detached tracker.
IdenticalLayers findIdenticalLayers(const Layers& layers, const torch::nn::Sequential& sequential, const Tensors& input,
                                    const torch::Device& device, Precision precision);

/// Whether the memory passes of every layer at every size are expected to outlast the budget:
/// each size's are about kForwardsPerMemoryPasses forwards of the model, a forward taking the
/// found one's time scaled by size / smallest.
bool memoryPassesOutlast(const IdenticalLayers& found, std::int64_t smallest, std::int64_t sumOfSizes,
                         double budgetSeconds);

/// Copies, for every layer that takes an earlier layer's figures, that layer's times, backward
/// figures, launch data and cast copies (everything the passes it was left out of measure); its
/// own forward's figures (output, saved and forward workspace bytes: the whole forward runs every
/// layer) stay.
void takeIdenticalFigures(const std::vector<std::int64_t>& sameAs, std::vector<CostSample>& costs,
                          std::vector<Bytes>& castCacheBytes);

}  // namespace pipeprof::layer_profiling
