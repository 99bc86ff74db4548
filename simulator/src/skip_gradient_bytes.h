// What the gradients of skips routed across stages add to a stage's backward, at one
// micro-batch size (docs/simulator.md, "A skip's gradient").
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"

#include <pipeprof/core/units.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// The rules for one candidate at one micro-batch size. A popped skip is a leaf on its pop
/// stage, so that stage's backward makes its gradient; where the popping layer hands the
/// very tensor to its other input, part of it is counted elsewhere. Skips are the profile's indices.
class SkipGradientBytes {
 public:
  SkipGradientBytes(const CompiledSchedule& compiled, const CostModel& costs, const LayerCostTable& table,
                    const std::vector<std::int64_t>& firstLayer, std::int64_t microBatch);

  /// Under a split backward, the part of skip s's gradient that I makes as the very tensor the
  /// popping layer's input gets (SkipProfile::gradientSharedWithInput), which is counted there:
  /// in what the layer before keeps for W (that layer in the popping stage too), or, where
  /// the pop is the stage's first layer and the skip comes from the stage before, in
  /// the gradient of the stage's input, which that stage's backward takes as it takes
  /// the skip's.
  Bytes sharedWithInput(std::int32_t s) const;

  /// The same for a whole backward (SkipProfile::gradientSharedInBackward): the tensor the
  /// popping layer hands its input, which that layer's backward and the one before count in
  /// their workspaces. Past them the skip's gradient keeps it alone, except where the pop is
  /// the stage's first layer and the skip comes from the stage before: there it is the
  /// gradient of the stage's input, which that stage's backward takes with the skip's
  /// (`atInput`).
  Bytes sharedInBackward(std::int32_t s, bool atInput) const;

  /// What stage j's backward (I's when `input`) holds of the gradients of skips another
  /// stage stashed and j pops, made by the backward of layer l or of a later layer, at
  /// layer l. A slice of the popping layer's output gradient (a concatenation's) is a copy
  /// of its own from the moment that layer's backward returns (the runtime's slice hooks make
  /// it, in B and in I: runtime/src/stage/slice_hooks.h), counted as any other.
  Bytes heldAt(std::int32_t j, std::size_t l, bool input) const;

 private:
  /// The gradient the popping layer hands its input, as far as it is the skip's: at most the
  /// output of the layer before the pop.
  Bytes atLayerBeforePop(std::int32_t s) const;
  /// At the layer before the pop, the shared tensor is the gradient of that layer's output,
  /// whole in its I's workspace (the profiler's backward allocates it there).
  Bytes sharedBeforePop(std::int32_t s) const;
  /// Whether skip s, stashed by another stage, is popped by j.
  bool popsInto(std::int32_t s, std::int32_t j) const;
  bool opensItsStage(std::int32_t s) const;
  Bytes skipBytes(std::int32_t s) const;

  const CompiledSchedule& compiled_;
  const CostModel& costs_;
  const LayerCostTable& table_;
  const std::vector<std::int64_t>& firstLayer_;
  std::int64_t microBatch_;
};

}  // namespace pipeprof::sim
