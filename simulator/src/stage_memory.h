// One stage's memory inside its ops, from its layers' profile: each op's transient peak
// above its start, and what a split backward moves between I, W and the neighbours.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"

#include <pipeprof/core/units.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// What a compute op of one stage (layers [first, end)) holds above its starting level at
/// its busiest layer (docs/simulator.md, "Memory model"). A forward that keeps its graph builds
/// up saved bytes layer by layer; a backward frees them layer by layer, last layer first.
struct TransientPeaks {
  Bytes gradForward = 0;
  /// gradForward is reached in the forward's second half (its busiest layer ends past half of
  /// the stage's forward time): the engine charges it at the op's end.
  bool gradForwardLate = false;
  Bytes noGradForward = 0;
  Bytes backward = 0;
  Bytes backwardInput = 0;  ///< a split backward's I (0 where no input wants a gradient)
  /// The backward's (and I's) peak where it is reached only at the op's end, else 0: a layer
  /// allocates the gradient of its input as its backward finishes, the stage's first layer (it
  /// runs last) as the op ends and a later one past half of the op's time where its backward
  /// ends there, so its peak with that gradient comes after whatever the other devices freed
  /// meanwhile; before it, backward and backwardInput hold that layer's peak less what that
  /// last allocation adds (LayerCostTable::backwardEndRiseBytes, inputEndRiseBytes).
  Bytes backwardAtEnd = 0;
  Bytes backwardInputAtEnd = 0;
  /// The backward's peak when nothing else keeps the stage's output (the first stage's W of a
  /// checkpointed micro-batch: the recomputed output is its graph's alone once I let it go).
  Bytes backwardOutputFreed = 0;
  /// The backward's peak with the output kept but the skips the stage stashed for later stages
  /// let go as their last saving layer's backward runs: the first stage's W runs from the
  /// graph's edges, after its I dropped the roots it was handed (stage_core.cpp).
  Bytes backwardRootsFreed = 0;
};

/// A skip the stage stashes for a later stage: a root of the stage's backward (its gradient
/// comes back from the pop), so the part of it that layer `savedBy` saved stays until the
/// backward ends, not until that layer's backward.
struct StashedRoot {
  std::size_t savedBy = 0;
  Bytes savedBytes = 0;
};

/// `splits`: also the peaks of a split backward (I, and the first stage's W of a recomputed
/// graph), I's where `inputGradients` (the stage's input wants a gradient).
/// `heldSkipGradients(l, input)`: the gradients of popped leaves (skips another stage stashed)
/// that the backward of layer l or of a later layer made, held from then on; `input` for I's.
/// `stashedRoots`: the skips the stage stashes for later stages.
template <typename HeldSkipGradients>
TransientPeaks transientPeaks(const LayerCostTable& table, std::size_t first, std::size_t end,
                              bool receivesOutputGradient, bool splits, bool inputGradients,
                              const std::vector<StashedRoot>& stashedRoots, HeldSkipGradients heldSkipGradients) {
  TransientPeaks peaks;
  // What layer l holds right after its forward: what it saves and the part of its output the
  // graph does not keep.
  auto liveAfter = [&](std::size_t l) {
    return table.savedPrefix[l + 1] - table.savedPrefix[l] + table.unsavedOutputBytes(l);
  };
  // A stage that is not the last keeps its output (the root of its graph) until its backward
  // ends: the part of it the graph saved is not freed when its last layer's backward is done.
  // (The last stage handed its output to the loss, whose backward lets it go.)
  const Bytes outputKept = receivesOutputGradient ? table.outputSavedBytes[end - 1] : 0;
  // I keeps, for W, the gradients each layer's I captured (the gradient of its output where a
  // matrix product takes it, those inside it); the last layer's output gradient, received from
  // j + 1, is counted there.
  auto keptGradient = [&](std::size_t k) {
    const Bytes received = receivesOutputGradient && k + 1 == end ? table.outputGradientKeptBytes[k] : 0;
    return std::max<Bytes>(0, table.inputKeptBytes[k] - received);
  };
  // Whether layer l's backward (from the prefix sums of its times) ends past half of the
  // stage's: the first layer's always does, it runs last.
  auto endsLate = [&](const std::vector<TimeNs>& prefix, std::size_t l) {
    return l == first || 2 * (prefix[end] - prefix[l]) > prefix[end] - prefix[first];
  };
  Bytes keptAfter = 0;  // by the layers after l
  for (std::size_t k = first + 1; k < end; ++k) keptAfter += keptGradient(k);
  for (std::size_t l = first; l < end; ++l) {
    const Bytes savedBefore = table.savedPrefix[l] - table.savedPrefix[first];
    // (The kept output is among those bytes only where a later layer saved it: a last layer that
    // passes on its input, such as a stash, has it saved by the layer before.)
    // Nor are the saved parts of the skips it stashes for later stages (resnet [25,21] gpipe x2:
    // a residual block's ReLU output, 4 MiB, read as freed before the block's BatchNorm ran).
    Bytes rootsKept = 0;
    for (const StashedRoot& root : stashedRoots) rootsKept += root.savedBy > l ? root.savedBytes : 0;
    // Layer l + 1's backward also frees what of l's saved bytes only its nodes kept (l's output,
    // saved as l + 1's input), before l's backward runs.
    const Bytes freedByNext = l + 1 < end ? table.savedFreedByNextBytes[l] : 0;
    const Bytes savedAfterAll = table.savedPrefix[end] - table.savedPrefix[l + 1] + freedByNext;
    const Bytes savedAfterRootsFreed = std::max<Bytes>(0, savedAfterAll - (l + 1 < end ? outputKept : Bytes{0}));
    const Bytes savedAfter = std::max<Bytes>(0, savedAfterRootsFreed - rootsKept);
    // The layer's input is the previous layer's output (the stage's input is held already);
    // the part of it nothing saved is live until the layer returns.
    const Bytes input = l > first ? table.outputBytes[l - 1] : 0;
    const Bytes unsavedInput = l > first ? table.unsavedOutputBytes(l - 1) : 0;
    const Bytes forwardWorkspace = table.forwardWorkspaceBytes[l];
    const Bytes gradForward = savedBefore + unsavedInput + liveAfter(l) + forwardWorkspace;
    if (gradForward > peaks.gradForward) {
      peaks.gradForward = gradForward;
      peaks.gradForwardLate = 2 * (table.forwardPrefix[l + 1] - table.forwardPrefix[first]) >
                              table.forwardPrefix[end] - table.forwardPrefix[first];
    }
    peaks.noGradForward = std::max(peaks.noGradForward, input + table.outputBytes[l] + forwardWorkspace);
    // The profiler runs a layer's backward from a gradient of its output that it allocates
    // itself. Inside the stage that gradient is the next layer's input gradient, made by its
    // backward and let go once used, and the output is held by nothing but the graph: the inner
    // workspace. The last layer's, on a stage that is not the last, is received from j + 1
    // (counted there as the gradient of j + 1's input, or here as a copy buffer) and held, with
    // the output, to the backward's end: the workspace held, less that gradient. (The last
    // stage's comes from the loss's backward on this device, as inside a stage.)
    const bool holdsOutput = receivesOutputGradient && l + 1 == end;
    const Bytes outputGradient = holdsOutput ? table.outputBytes[l] : 0;
    const Bytes workspace =
        holdsOutput ? table.backwardWorkspaceBytes[l] - outputGradient : table.innerBackwardWorkspaceBytes[l];
    // A layer's backward makes the gradient of its input last. The first layer's ends the op
    // (where the stage's input wants one); a later layer's comes late when the layer's backward
    // ends past half of the op's time (the layers run last first).
    const bool hasInputGradient = inputGradients || l > first;
    const Bytes backwardHere = workspace - savedAfter + heldSkipGradients(l, false);
    const Bytes backwardRise = hasInputGradient && endsLate(table.backwardPrefix, l)
                                   ? std::min(backwardHere, table.backwardEndRiseBytes[l])
                                   : 0;
    peaks.backward = std::max(peaks.backward, backwardHere - backwardRise);
    if (backwardRise > 0) peaks.backwardAtEnd = std::max(peaks.backwardAtEnd, backwardHere);
    if (!splits) continue;
    peaks.backwardRootsFreed =
        std::max(peaks.backwardRootsFreed, backwardHere - backwardRise - (savedAfterRootsFreed - savedAfter));
    peaks.backwardOutputFreed =
        std::max(peaks.backwardOutputFreed, workspace - savedAfterAll + heldSkipGradients(l, false));
    // I frees no saved tensor before it ends: at layer l it holds the layer's own peak over the
    // gradients the later layers captured for W.
    if (inputGradients) {
      if (l > first) keptAfter -= keptGradient(l);
      const Bytes inputHere = table.inputWorkspaceBytes[l] - outputGradient + keptAfter + heldSkipGradients(l, true);
      const Bytes inputRise =
          endsLate(table.backwardInputPrefix, l) ? std::min(inputHere, table.inputEndRiseBytes[l]) : 0;
      peaks.backwardInput = std::max(peaks.backwardInput, inputHere - inputRise);
      if (inputRise > 0) peaks.backwardInputAtEnd = std::max(peaks.backwardInputAtEnd, inputHere);
    }
  }
  // Reached at the end only where it tops what the op held before.
  if (peaks.backwardAtEnd <= peaks.backward) peaks.backwardAtEnd = 0;
  if (peaks.backwardInputAtEnd <= peaks.backwardInput) peaks.backwardInputAtEnd = 0;
  return peaks;
}

/// What a split backward moves for stage j (layers [first, end)): what I keeps for W on
/// j, the gradient of j's output W needs (held on j + 1 when `sharesOutputGradient`, the two
/// using one tensor, else on j as the copy's buffer) and W's transient. `sharesInput`: j's
/// input is j - 1's output itself, which j - 1 counts; `inputUser` the layer that takes it
/// (cost_model.cpp's firstInputUser).
void resolveSplitBytes(const SlotLayout& layout, const LayerCostTable& table, std::size_t first, std::size_t end,
                       std::size_t inputUser, std::int32_t j, bool sharesInput, bool sharesOutputGradient,
                       Bytes* bytes);

}  // namespace pipeprof::sim
