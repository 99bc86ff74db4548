// Running a model's layers one at a time, as the layer profiler's passes do: each on its stage's
// inputs, its backward alone from ones, skips through the profiler's own tracker.
#pragma once

#include "layer_profiling/profiler_skip_tracker.h"
#include "stage/microbatch.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/runtime/model.h>

#include <torch/csrc/autograd/edge.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::layer_profiling {

/// The layers of a Sequential, with their names, in order.
struct Layers {
  std::vector<torch::nn::AnyModule*> modules;
  std::vector<std::string> names;
  /// Per layer, the layer whose figures it takes (identical_layers.h): itself, or an earlier
  /// identical layer, when the passes leave it out. Empty: every layer runs.
  std::vector<std::int64_t> sameAs;

  /// Whether the passes run layer L (the others take an identical layer's figures).
  bool runs(std::int64_t L) const { return sameAs.empty() || sameAs[static_cast<std::size_t>(L)] == L; }
};

/// The model's layers, named as a user names them (layerNames: module paths where it has them).
Layers layersOf(Model& model);

/// Runs the layer on its inputs (one tensor or a list); throws std::invalid_argument naming the
/// layer when it returns neither a tensor nor a list of tensors.
Tensors runLayer(torch::nn::AnyModule& layer, const Tensors& inputs, const std::string& name);

/// Layer L's inputs as a stage gets them (stage_input.h): detached, and floating ones ending
/// in a gradient sink so backward reaches them and an in-place layer may write them, except
/// the model's own input (L == 0): the Pipe's first stage gets the batch, which needs no
/// gradient, so the first layer's backward computes none for it (a Linear skips a whole GEMM)
/// and is profiled that way.
Tensors stageInputs(const Tensors& inputs, std::int64_t L);

/// The outputs that need a gradient, with ones as their gradients.
struct BackwardRoots {
  Tensors roots;
  Tensors grads;
};

BackwardRoots backwardRoots(const Tensors& outputs);

/// The whole backward from the roots, autocast paused (the backward's ops take the types the
/// forward chose).
void runBackward(const BackwardRoots& backward);

/// Runs the backward of the outputs alone (ones as their gradient).
void backwardOf(const Tensors& outputs);
/// A backward as a stage runs a layer inside it, whose output the next layer used: per output
/// that needs a gradient, an empty root whose backward makes the output's gradient (ones),
/// which the autograd engine lets go once used. The roots hold no output, so what the graph
/// does not keep of `outputs` is gone when the caller's copies are.
Tensors onesGradientRoots(const Tensors& outputs);
/// Runs the backward from such roots, autocast paused, and lets them go.
void runFromOnesGradientRoots(Tensors roots);

/// The edges a layer's I computes gradients for: those of its inputs that have a gradient sink
/// (stageInputs), an invalid edge for the others.
torch::autograd::edge_list gradientEdges(const Tensors& inputs);

/// Runs every layer alone, in order, on leaves of the previous layer's outputs (skips detached
/// too): `run(L, inputs)` returns layer L's outputs, which feed layer L + 1. A layer the passes
/// leave out (Layers::sameAs) is not run: its input, of its output's shape, feeds the next. A popped skip needs
/// no gradient here: where the skip stays inside a stage, its gradient is the one the popping
/// layer's backward hands its other input (resnet's add passes one tensor to both), and a leaf
/// requiring grad would make autograd accumulate a clone of it (an activation's size charged to
/// the pop's backward workspace that a pipeline allocates only when the skip leaves its stage,
/// which the simulator adds then).
template <typename Run>
void eachLayerAlone(const Layers& layers, const Tensors& input, ProfilerSkipTracker& skips, Run run) {
  ScopedSkipTracker scope(&skips);
  Tensors x = input;
  for (std::int64_t L = 0; L < static_cast<std::int64_t>(layers.modules.size()); ++L) {
    if (!layers.runs(L)) continue;
    skips.setLayer(L);
    x = run(L, stageInputs(x, L));
  }
}

/// The same with skips handed out as detached copies that need no gradient.
template <typename Run>
void eachLayerAlone(const Layers& layers, const Tensors& input, Precision precision, Run run) {
  ProfilerSkipTracker detached(ProfilerSkipTracker::HandOut::DetachedWithoutGrad, precision);
  eachLayerAlone(layers, input, detached, run);
}

}  // namespace pipeprof::layer_profiling
