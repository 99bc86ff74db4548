// What the gradients of skips routed across stages add to a stage's backward
// (skip_gradient_bytes.h).
#include "skip_gradient_bytes.h"

#include <algorithm>

namespace pipeprof::sim {

SkipGradientBytes::SkipGradientBytes(const CompiledSchedule& compiled, const CostModel& costs,
                                     const LayerCostTable& table, const std::vector<std::int64_t>& firstLayer,
                                     std::int64_t microBatch)
    : compiled_(compiled), costs_(costs), table_(table), firstLayer_(firstLayer), microBatch_(microBatch) {}

Bytes SkipGradientBytes::skipBytes(std::int32_t s) const {
  return costs_.tensorBytes(costs_.profile().skips[static_cast<std::size_t>(s)].bytesPerSample * microBatch_);
}

bool SkipGradientBytes::opensItsStage(std::int32_t s) const {
  const std::int32_t pop = compiled_.skipPopStage[static_cast<std::size_t>(s)];
  return costs_.profile().skips[static_cast<std::size_t>(s)].popLayer == firstLayer_[static_cast<std::size_t>(pop)];
}

Bytes SkipGradientBytes::sharedWithInput(std::int32_t s) const {
  const SkipProfile& skip = costs_.profile().skips[static_cast<std::size_t>(s)];
  const auto k = static_cast<std::size_t>(s);
  if (!compiled_.splitsBackward || !skip.gradientSharedWithInput) return 0;
  const auto before = static_cast<std::size_t>(skip.popLayer - 1);
  const bool firstOfStage = opensItsStage(s);
  if (firstOfStage && compiled_.skipStashStage[k] != compiled_.skipPopStage[k] - 1) return 0;
  return std::min(skipBytes(s), firstOfStage ? table_.outputBytes[before] : table_.inputKeptBytes[before]);
}

Bytes SkipGradientBytes::atLayerBeforePop(std::int32_t s) const {
  const SkipProfile& skip = costs_.profile().skips[static_cast<std::size_t>(s)];
  return std::min(skipBytes(s), table_.outputBytes[static_cast<std::size_t>(skip.popLayer - 1)]);
}

Bytes SkipGradientBytes::sharedBeforePop(std::int32_t s) const {
  const SkipProfile& skip = costs_.profile().skips[static_cast<std::size_t>(s)];
  if (!compiled_.splitsBackward || !skip.gradientSharedWithInput) return 0;
  return atLayerBeforePop(s);
}

Bytes SkipGradientBytes::sharedInBackward(std::int32_t s, bool atInput) const {
  const SkipProfile& skip = costs_.profile().skips[static_cast<std::size_t>(s)];
  const auto k = static_cast<std::size_t>(s);
  if (!skip.gradientSharedInBackward) return 0;
  if (atInput && (!opensItsStage(s) || compiled_.skipStashStage[k] != compiled_.skipPopStage[k] - 1)) {
    return 0;
  }
  return atLayerBeforePop(s);
}

bool SkipGradientBytes::popsInto(std::int32_t s, std::int32_t j) const {
  return compiled_.skipPopStage[static_cast<std::size_t>(s)] == j &&
         compiled_.skipStashStage[static_cast<std::size_t>(s)] != j;
}

// In I the shared part of a skip's gradient is counted elsewhere: in the popping layer's own
// workspace (the gradient it gives its input), in the layer before's (the gradient of its
// output), then, below that layer, among the gradients kept for W. In B, where it is shared, at
// the popping layer and the one before, in their workspaces (the gradient of the layer's input,
// then of its output).
Bytes SkipGradientBytes::heldAt(std::int32_t j, std::size_t l, bool input) const {
  Bytes held = 0;
  for (std::int32_t s = 0; s < compiled_.layout.skips; ++s) {
    const SkipProfile& skip = costs_.profile().skips[static_cast<std::size_t>(s)];
    const auto pop = static_cast<std::size_t>(skip.popLayer);
    if (!popsInto(s, j) || pop < l) continue;
    held += skipBytes(s);
    if (input) held -= l + 1 == pop ? sharedBeforePop(s) : sharedWithInput(s);
    if (!input && l + 1 >= pop) held -= sharedInBackward(s, /*atInput=*/false);
  }
  return held;
}

}  // namespace pipeprof::sim
