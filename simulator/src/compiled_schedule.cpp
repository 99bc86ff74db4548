// Flattens a Schedule into arrays and attaches the memory model's effects to its ops.
#include "compiled_schedule.h"

#include "late_releases.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace pipeprof::sim {
namespace {

struct OpEffects {
  std::vector<MemoryEffect> startAlloc;
  std::vector<MemoryEffect> transient;
  std::vector<MemoryEffect> endTransient;
  std::vector<MemoryEffect> endAlloc;
  std::vector<MemoryEffect> endRelease;
  std::vector<CompiledSchedule::Hold> holds;  ///< started at its end
};

std::int32_t narrow(std::int64_t value) { return static_cast<std::int32_t>(value); }

Range append(std::vector<MemoryEffect>& flat, const std::vector<MemoryEffect>& part) {
  Range range;
  range.begin = static_cast<std::uint32_t>(flat.size());
  flat.insert(flat.end(), part.begin(), part.end());
  range.end = static_cast<std::uint32_t>(flat.size());
  return range;
}

/// One process per device (docs/simulator.md, "Memory model"): a rank frees only its own
/// tensors, and a tensor it sent stays with the send until its last op ends. A release the
/// threads' model gives another rank's op (the receiver let go of the sender's tensor) moves to
/// the end of the owning rank's last op, as do `sent` (what B and I leave to the sends: a sent
/// output, the saved part of what was sent) and a hold another rank's op would end. A received
/// tensor's buffer is allocated when the receiving rank posts it: at the start of the op
/// kReceivesPostedAhead before the one that takes it in the rank's order (the first few at the
/// start of its first op).
void keepWhatRanksSent(const Schedule& schedule, const std::vector<MemoryEffect>& sent,
                       std::vector<OpEffects>& effects) {
  const std::vector<Op>& ops = schedule.ops();
  auto laneOf = [&](std::int64_t j) { return schedule.deviceOf(j); };
  std::vector<std::size_t> lastOp(static_cast<std::size_t>(schedule.devices()));
  std::vector<std::size_t> position(ops.size(), 0);
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    const std::vector<OpIndex>& order = schedule.deviceOrder(d);
    if (order.empty()) continue;
    lastOp[static_cast<std::size_t>(d)] = order.back();
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  }
  auto lastOpOf = [&](const MemoryEffect& effect) { return lastOp[static_cast<std::size_t>(laneOf(effect.j))]; };
  for (const MemoryEffect& effect : sent) effects[lastOpOf(effect)].endRelease.push_back(effect);
  for (std::size_t index = 0; index < ops.size(); ++index) {
    const Op& op = ops[index];
    OpEffects& e = effects[index];
    if (op.kind == OpKind::Copy || op.kind == OpKind::SkipCopy) {
      if (laneOf(op.j) == laneOf(op.toJ) || e.startAlloc.empty()) continue;
      const auto taker =
          op.gradient ? schedule.gradientConsumer(op.i, op.toJ) : schedule.find(OpKind::Forward, op.i, op.toJ);
      if (!taker) continue;
      const std::vector<OpIndex>& order = schedule.deviceOrder(laneOf(op.toJ));
      const std::size_t at = position[*taker];
      const OpIndex poster = order[at < kReceivesPostedAhead ? 0 : at - kReceivesPostedAhead];
      std::vector<MemoryEffect>& posted = effects[poster].startAlloc;
      posted.insert(posted.end(), e.startAlloc.begin(), e.startAlloc.end());
      e.startAlloc.clear();
      continue;
    }
    const std::int64_t lane = laneOf(op.j);
    auto othersTensor = [&](const MemoryEffect& effect) { return laneOf(effect.j) != lane; };
    for (const MemoryEffect& effect : e.endRelease) {
      if (othersTensor(effect)) effects[lastOpOf(effect)].endRelease.push_back(effect);
    }
    e.endRelease.erase(std::remove_if(e.endRelease.begin(), e.endRelease.end(), othersTensor), e.endRelease.end());
    for (CompiledSchedule::Hold& hold : e.holds) {
      if (laneOf(hold.effect.j) != laneOf(ops[hold.untilOp].j)) {
        hold.untilOp = static_cast<std::uint32_t>(lastOpOf(hold.effect));
      }
    }
  }
}

bool fact(const std::vector<bool>& facts, std::size_t k) { return k < facts.size() && facts[k]; }

/// The memory model's effects of each op (docs/simulator.md, "Memory model"), one step per op
/// kind, gathered per op before compileSchedule flattens them. Holds what the steps share: the
/// schedule, its slot layout and the stages of its skips.
class OpEffectsBuilder {
 public:
  OpEffectsBuilder(const Schedule& schedule, const SkipFacts& skipFacts, bool processPerDevice,
                   const CompiledSchedule& out)
      : schedule_(schedule),
        spec_(schedule.spec()),
        skipFacts_(skipFacts),
        processPerDevice_(processPerDevice),
        training_(spec_.training),
        n_(schedule.stages()),
        m_(schedule.chunks()),
        firstLossI_(firstLossMicroBatch(schedule)),
        layout_(out.layout),
        stashStage_(out.skipStashStage),
        popStage_(out.skipPopStage),
        effects_(schedule.ops().size()) {}

  /// Sets c's duration slot and adds op `index`'s effects (a copy's go to its consumer too).
  void add(std::size_t index, CompiledOp& c) {
    const Op& op = schedule_.ops()[index];
    OpEffects& e = effects_[index];
    switch (op.kind) {
      case OpKind::Forward: forward(op, c, e); break;
      case OpKind::Loss: loss(op, c, e); break;
      case OpKind::Recompute: recompute(op, c, e); break;
      case OpKind::BackwardWeight: backwardWeight(op, c, e); break;
      case OpKind::Backward:
      case OpKind::BackwardInput: backward(op, c, e); break;
      case OpKind::Copy:
      case OpKind::SkipCopy: copy(op, c, e); break;
    }
  }

  std::vector<OpEffects>& effects() { return effects_; }
  /// With one process per device: releases a rank's send defers to the rank's last op.
  const std::vector<MemoryEffect>& sentUntilLastOp() const { return sentUntilLastOp_; }

 private:
  void forward(const Op& op, CompiledOp& c, OpEffects& e);
  void loss(const Op& op, CompiledOp& c, OpEffects& e);
  void recompute(const Op& op, CompiledOp& c, OpEffects& e);
  void backwardWeight(const Op& op, CompiledOp& c, OpEffects& e);
  /// B, or I, which does what B does except that it goes from the saved bytes to what W needs.
  void backward(const Op& op, CompiledOp& c, OpEffects& e);
  void copy(const Op& op, CompiledOp& c, OpEffects& e);

  // Size class 1 is the last micro-batch (possibly smaller); class 0 every other one.
  std::int32_t sizeClass(std::int64_t i) const { return i == m_ - 1 ? 1 : 0; }
  std::int32_t byteSlot(std::int64_t i, std::int32_t slot) const {
    return sizeClass(i) * layout_.bytesPerClass() + slot;
  }
  std::int32_t durationSlot(std::int64_t i, std::int32_t slot) const {
    return sizeClass(i) * layout_.durationsPerClass() + slot;
  }
  /// `slot`'s bytes of micro-batch i on `stage`.
  MemoryEffect memoryOf(std::int64_t i, std::int32_t stage, std::int32_t slot) const {
    return MemoryEffect{stage, byteSlot(i, slot)};
  }
  std::int32_t stashOf(std::int32_t s) const { return stashStage_[static_cast<std::size_t>(s)]; }
  std::int32_t popOf(std::int32_t s) const { return popStage_[static_cast<std::size_t>(s)]; }
  // A skip routed within one stage lives inside that stage's forward (a recompute
  // stashes it again), so only routes across stages hold memory between ops. Such a stash
  // holds the whole skip tensor until the pop's backward when the forward saved nothing (a
  // checkpointed micro-batch: the pop stage's recompute needs it). Otherwise, in training,
  // the backward graph saves what it needs of it (counted in a layer's saved bytes) and the
  // stash holds the rest until the pop's forward; in inference, all of it, as long.
  bool crossesStages(std::int32_t s) const { return stashOf(s) != popOf(s); }
  std::int32_t skipSlot(std::int64_t i, std::int32_t s) const {
    return training_ && !schedule_.checkpointed(i) ? layout_.skipUnsavedBytes(s) : layout_.skipBytes(s);
  }
  bool skipHeldUntilPopBackward(std::int64_t i) const { return training_ && schedule_.checkpointed(i); }
  bool opensItsStage(std::int64_t layer, std::int32_t j) const { return schedule_.stageOfLayer(layer - 1) != j; }
  // With one process per device, a checkpointed micro-batch's stage that opens with a stash of
  // its input for another rank: the send keeps the input's buffer to the rank's last op, so the
  // skip is counted from the op that frees that buffer (the stage's backward) rather than
  // beside it from the forward.
  bool sendsItsInputAsSkip(std::int64_t i, std::int32_t s) const {
    const auto k = static_cast<std::size_t>(s);
    const std::int32_t stash = stashStage_[k];
    const std::int64_t lane = schedule_.deviceOf(stash);
    return processPerDevice_ && training_ && schedule_.checkpointed(i) && fact(skipFacts_.stashReturnsItsInput, k) &&
           stash > 0 && opensItsStage(spec_.skips[k].stashLayer, stash) && schedule_.deviceOf(stash - 1) != lane &&
           schedule_.deviceOf(popStage_[k]) != lane;
  }
  // j's output, which j + 1's W keeps (a micro-batch not checkpointed), held from this op's end
  // until W(i, j + 1) ends.
  void holdOutputUntilNextWeight(const Op& releaser, std::int32_t slot, OpEffects& into) const {
    if (releaser.j + 1 >= n_ || schedule_.checkpointed(releaser.i)) return;
    const auto weight = schedule_.find(OpKind::BackwardWeight, releaser.i, releaser.j + 1);
    if (weight) {
      into.holds.push_back({memoryOf(releaser.i, narrow(releaser.j), slot), static_cast<std::uint32_t>(*weight)});
    }
  }
  // With one process per device, what j sent another rank stays with its send (the graph of a
  // checkpointed micro-batch's recompute made other tensors).
  bool keepsSent(const Op& backward) const { return processPerDevice_ && !schedule_.checkpointed(backward.i); }
  // The micro-batch of the first loss op in the last stage's order: the step's first call of the
  // loss, which pays its cold start (LossProfile::coldStartNs); -1 without one.
  static std::int64_t firstLossMicroBatch(const Schedule& schedule) {
    for (const OpIndex index : schedule.stageOrder(schedule.stages() - 1)) {
      const Op& op = schedule.op(index);
      if (op.kind == OpKind::Loss) return op.i;
    }
    return -1;
  }
  bool isFirstLoss(const Op& loss) const { return firstLossI_ < 0 || loss.i == firstLossI_; }

  const Schedule& schedule_;
  const ScheduleSpec& spec_;
  const SkipFacts& skipFacts_;
  const bool processPerDevice_;
  const bool training_;
  const std::int64_t n_;
  const std::int64_t m_;
  const std::int64_t firstLossI_;
  const SlotLayout& layout_;
  const std::vector<std::int32_t>& stashStage_;
  const std::vector<std::int32_t>& popStage_;
  std::vector<OpEffects> effects_;
  std::vector<MemoryEffect> sentUntilLastOp_;
};

void OpEffectsBuilder::forward(const Op& op, CompiledOp& c, OpEffects& e) {
  const std::int32_t j = c.j;
  auto mem = [&](std::int32_t stage, std::int32_t slot) { return memoryOf(op.i, stage, slot); };
  const bool keepsGraph = training_ && !schedule_.checkpointed(op.i);
  c.durationSlot = durationSlot(op.i, keepsGraph ? layout_.forwardNs(j) : layout_.forwardNoGradNs(j));
  e.transient.push_back(mem(j, keepsGraph ? layout_.gradForwardPeak(j) : layout_.noGradForwardPeak(j)));
  if (keepsGraph) e.endTransient.push_back(mem(j, layout_.gradForwardPeakAtEnd(j)));
  if (keepsGraph) {
    e.endAlloc.push_back(mem(j, layout_.saved(j)));
    e.endAlloc.push_back(mem(j, layout_.unsavedOutput(j)));
  } else if (training_) {
    e.endAlloc.push_back(mem(j, layout_.output(j)));
  } else {
    if (j + 1 < n_) e.endAlloc.push_back(mem(j, layout_.output(j)));
    if (j > 0) e.endRelease.push_back(mem(j - 1, layout_.output(j - 1)));
  }
  for (std::int32_t s = 0; s < layout_.skips; ++s) {
    if (!crossesStages(s)) continue;
    if (stashOf(s) == j && !sendsItsInputAsSkip(op.i, s)) e.endAlloc.push_back(mem(j, skipSlot(op.i, s)));
    if (!skipHeldUntilPopBackward(op.i) && popOf(s) == j) {
      e.endRelease.push_back(mem(stashOf(s), skipSlot(op.i, s)));
    }
  }
}

void OpEffectsBuilder::loss(const Op& op, CompiledOp& c, OpEffects& e) {
  const std::int32_t j = c.j;
  auto mem = [&](std::int32_t stage, std::int32_t slot) { return memoryOf(op.i, stage, slot); };
  c.durationSlot = durationSlot(op.i, isFirstLoss(op) ? layout_.lossNs() : layout_.laterLossNs());
  e.transient.push_back(mem(j, layout_.lossPeak()));
  // A checkpointed micro-batch's loss runs without a graph: the last stage's output, kept
  // since its forward for this loss, is freed (recompute(i, n-1) makes it again, and the
  // loss's graph with it).
  if (schedule_.checkpointed(op.i)) {
    e.endRelease.push_back(mem(j, layout_.output(j)));
  } else {
    e.endAlloc.push_back(mem(j, layout_.lossHeld()));
  }
}

void OpEffectsBuilder::recompute(const Op& op, CompiledOp& c, OpEffects& e) {
  const std::int32_t j = c.j;
  auto mem = [&](std::int32_t stage, std::int32_t slot) { return memoryOf(op.i, stage, slot); };
  const bool withLoss = training_ && j + 1 == n_;
  c.durationSlot = durationSlot(op.i, withLoss ? layout_.recomputeWithLossNs() : layout_.forwardNs(j));
  e.transient.push_back(mem(j, withLoss ? layout_.recomputeWithLossPeak() : layout_.gradForwardPeak(j)));
  if (!withLoss) e.endTransient.push_back(mem(j, layout_.gradForwardPeakAtEnd(j)));
  e.endAlloc.push_back(mem(j, layout_.saved(j)));
  e.endAlloc.push_back(mem(j, layout_.unsavedOutput(j)));  // the recomputed output, its graph's root
  if (withLoss) e.endAlloc.push_back(mem(j, layout_.lossHeld()));
}

void OpEffectsBuilder::backwardWeight(const Op& op, CompiledOp& c, OpEffects& e) {
  const std::int32_t j = c.j;
  auto mem = [&](std::int32_t stage, std::int32_t slot) { return memoryOf(op.i, stage, slot); };
  // W frees what I kept for it; its transient is the weights' gradients before they are
  // accumulated, one layer's at a time.
  c.durationSlot = durationSlot(op.i, layout_.backwardWeightNs(j));
  e.transient.push_back(
      mem(j, schedule_.checkpointed(op.i) ? layout_.checkpointedWeightBackwardPeak(j) : layout_.weightBackwardPeak(j)));
  e.endRelease.push_back(mem(j, keepsSent(op) ? layout_.weightSavedUnsent(j) : layout_.weightSaved(j)));
  if (j + 1 < n_) {
    e.endRelease.push_back(mem(j + 1, layout_.gradientHeldOnSender(j)));
    e.endRelease.push_back(mem(j, layout_.gradientHeldOnReceiver(j)));
  }
  if (schedule_.checkpointed(op.i) && j > 0) e.endRelease.push_back(mem(j - 1, layout_.inputHeldForWeight(j)));
  if (j > 0) e.endRelease.push_back(mem(j, layout_.inputCopyHeldForWeight(j)));
  holdOutputUntilNextWeight(op, layout_.outputHeldAfterWeight(j + 1), e);
  // A popped skip's gradient that W kept as its own stays until the stash stage used it.
  for (std::int32_t s = 0; s < layout_.skips; ++s) {
    const auto k = static_cast<std::size_t>(s);
    if (!crossesStages(s) || popStage_[k] != j) continue;
    if (!fact(skipFacts_.gradientSharedWithInput, k)) continue;
    // (A pop that is the stage's first layer shares it with the input's gradient instead.)
    if (opensItsStage(spec_.skips[k].popLayer, j)) continue;
    const auto consumer = schedule_.gradientConsumer(op.i, stashStage_[k]);
    if (consumer) e.holds.push_back({mem(j, layout_.skipGradSharedBytes(s)), static_cast<std::uint32_t>(*consumer)});
  }
}

void OpEffectsBuilder::backward(const Op& op, CompiledOp& c, OpEffects& e) {
  const std::int32_t j = c.j;
  auto mem = [&](std::int32_t stage, std::int32_t slot) { return memoryOf(op.i, stage, slot); };
  const bool input = op.kind == OpKind::BackwardInput;
  c.durationSlot = durationSlot(op.i, input ? layout_.backwardInputNs(j) : layout_.backwardNs(j));
  e.transient.push_back(mem(j, input ? layout_.backwardInputPeak(j) : layout_.backwardPeak(j)));
  e.endTransient.push_back(mem(j, input ? layout_.backwardInputPeakAtEnd(j) : layout_.backwardPeakAtEnd(j)));
  if (j > 0) e.endAlloc.push_back(mem(j, layout_.output(j - 1)));  // gradient of j's input
  if (input) e.endAlloc.push_back(mem(j, layout_.weightSavedGrowth(j)));
  holdOutputUntilNextWeight(op, layout_.outputHeldAfterInput(j + 1), e);
  // A B (a custom order may mix them) frees all a first stage's W would have.
  if (!input) holdOutputUntilNextWeight(op, layout_.outputHeldAfterWeight(j + 1), e);
  if (keepsSent(op)) {
    e.endRelease.push_back(mem(j, input ? layout_.savedFreedByInputUnsent(j) : layout_.savedUnsent(j)));
    sentUntilLastOp_.push_back(mem(j, layout_.sentSaved(j)));
  } else {
    e.endRelease.push_back(mem(j, input ? layout_.savedFreedByInput(j) : layout_.saved(j)));
  }
  if (keepsSent(op) && j + 1 < n_ && schedule_.deviceOf(j + 1) != schedule_.deviceOf(j)) {
    sentUntilLastOp_.push_back(mem(j, layout_.unsavedOutput(j)));
  } else {
    e.endRelease.push_back(mem(j, layout_.unsavedOutput(j)));
  }
  if (j + 1 == n_) e.endRelease.push_back(mem(j, layout_.lossHeld()));
  if (schedule_.checkpointed(op.i) && j > 0) {
    e.endRelease.push_back(mem(j - 1, input ? layout_.checkpointedInputFreedByInput(j) : layout_.output(j - 1)));
  }
  if (j + 1 < n_) {  // the gradient of j + 1's input, j's output's: I keeps what W needs of it
    e.endRelease.push_back(mem(j + 1, input ? layout_.outputGradientFreedByInput(j) : layout_.output(j)));
  }
  for (std::int32_t s = 0; s < layout_.skips; ++s) {
    if (!crossesStages(s)) continue;
    const std::int32_t stash = stashOf(s);
    const std::int32_t pop = popOf(s);
    if (pop == j && skipHeldUntilPopBackward(op.i)) e.endRelease.push_back(mem(stash, skipSlot(op.i, s)));
    // The popped skip's gradient, made here, is held until the stash stage used it;
    // after I, the part W keeps anyway is counted there (skipGradSharedBytes).
    if (pop == j) e.endAlloc.push_back(mem(j, input ? layout_.skipGradUnsharedBytes(s) : layout_.skipGradBytes(s)));
    if (stash == j) {
      const bool popSplit = schedule_.find(OpKind::BackwardWeight, op.i, pop).has_value();
      e.endRelease.push_back(mem(pop, popSplit ? layout_.skipGradUnsharedBytes(s) : layout_.skipGradBytes(s)));
    }
  }
}

void OpEffectsBuilder::copy(const Op& op, CompiledOp& c, OpEffects& e) {
  auto mem = [&](std::int32_t stage, std::int32_t slot) { return memoryOf(op.i, stage, slot); };
  const std::int32_t slot = op.kind == OpKind::Copy ? layout_.copyBytes(std::min(c.j, c.toJ), op.gradient)
                                                    : layout_.skipCopyBytes(narrow(op.skip), op.gradient);
  c.durationSlot = durationSlot(op.i, op.kind == OpKind::Copy ? layout_.copyNs(std::min(c.j, c.toJ), op.gradient)
                                                              : layout_.skipCopyNs(narrow(op.skip), op.gradient));
  // The buffer is allocated on the destination at copy start and freed with the tensor
  // it carries: at the end of the destination's backward, or I (forward when not
  // training). What W keeps of it is in the first layer's weight_saved_bytes.
  e.startAlloc.push_back(mem(c.toJ, slot));
  // The first stage's I computes nothing: its W runs the whole backward, with the skips'
  // gradients it received.
  const bool takenByFirstWeight = op.kind == OpKind::SkipCopy && op.gradient && op.toJ == 0;
  const auto firstWeight = takenByFirstWeight ? schedule_.find(OpKind::BackwardWeight, op.i, 0) : std::nullopt;
  const auto consumer = firstWeight ? firstWeight
                        : training_ ? schedule_.gradientConsumer(op.i, op.toJ)
                                    : schedule_.find(OpKind::Forward, op.i, op.toJ);
  if (!consumer) {
    throw std::logic_error("schedule has no consumer op for " + schedule_.label(op));
  }
  // I frees the buffer but what W keeps of it (the two halves of one tensor).
  const std::int32_t freedSlot = op.kind != OpKind::Copy || schedule_.ops()[*consumer].kind != OpKind::BackwardInput
                                     ? slot
                                 : op.gradient ? layout_.gradientCopyFreedByInput(c.toJ)
                                               : layout_.inputCopyFreedByInput(c.toJ);
  effects_[*consumer].endRelease.push_back(mem(c.toJ, freedSlot));
  if (op.kind == OpKind::Copy && !op.gradient) {  // j's input: a stash at its start sent on?
    for (std::int32_t s = 0; s < layout_.skips; ++s) {
      if (stashOf(s) == c.toJ && sendsItsInputAsSkip(op.i, s))
        effects_[*consumer].endAlloc.push_back(mem(c.toJ, skipSlot(op.i, s)));
    }
  }
}

/// The schedule's shape: stages, skips and their stages, chunks, training.
void describeShape(const Schedule& schedule, CompiledSchedule& out) {
  const ScheduleSpec& spec = schedule.spec();
  out.layout.n = narrow(schedule.stages());
  out.layout.skips = narrow(static_cast<std::int64_t>(spec.skips.size()));
  out.chunks = narrow(schedule.chunks());
  out.training = spec.training;
  out.splitsBackward = spec.training && schedule.splitsBackward();
  for (const SkipRoute& route : spec.skips) {
    out.skipStashStage.push_back(narrow(schedule.stageOfLayer(route.stashLayer)));
    out.skipPopStage.push_back(narrow(schedule.stageOfLayer(route.popLayer)));
  }
}

/// Each op's identity and dependency count (its duration slot and effects come after).
void describeOp(const Op& op, CompiledOp& c) {
  c.kind = op.kind;
  c.i = narrow(op.i);
  c.j = narrow(op.j);
  c.toJ = narrow(op.toJ);
  c.dependencyCount = static_cast<std::uint32_t>(op.deps.size());
}

/// Successors (reverse dependencies), in increasing op order.
void linkSuccessors(const std::vector<Op>& ops, CompiledSchedule& out) {
  const std::size_t count = ops.size();
  std::vector<std::uint32_t> successorCount(count, 0);
  for (const Op& op : ops) {
    for (OpIndex dep : op.deps) ++successorCount[dep];
  }
  std::uint32_t offset = 0;
  for (std::size_t index = 0; index < count; ++index) {
    out.ops[index].successors.begin = offset;
    out.ops[index].successors.end = offset;
    offset += successorCount[index];
  }
  out.successors.resize(offset);
  for (std::size_t index = 0; index < count; ++index) {
    for (OpIndex dep : ops[index].deps) {
      out.successors[out.ops[dep].successors.end++] = static_cast<std::uint32_t>(index);
    }
  }
}

/// The effects into out.effects and the holds into out.holds, with each op's ranges.
void flattenEffects(const std::vector<OpEffects>& effects, CompiledSchedule& out) {
  const std::size_t count = effects.size();
  std::vector<std::vector<std::uint32_t>> holdsEnded(count);
  std::vector<CompiledSchedule::OpHolds> opHolds(count);
  for (std::size_t index = 0; index < count; ++index) {
    out.ops[index].startAlloc = append(out.effects, effects[index].startAlloc);
    out.ops[index].transient = append(out.effects, effects[index].transient);
    out.ops[index].endTransient = append(out.effects, effects[index].endTransient);
    out.ops[index].endAlloc = append(out.effects, effects[index].endAlloc);
    out.ops[index].endRelease = append(out.effects, effects[index].endRelease);
    opHolds[index].from.begin = static_cast<std::uint32_t>(out.holds.size());
    for (const CompiledSchedule::Hold& hold : effects[index].holds) {
      holdsEnded[hold.untilOp].push_back(static_cast<std::uint32_t>(out.holds.size()));
      out.holds.push_back(hold);
    }
    opHolds[index].from.end = static_cast<std::uint32_t>(out.holds.size());
  }
  for (std::size_t index = 0; index < count; ++index) {
    opHolds[index].until.begin = static_cast<std::uint32_t>(out.holdRefs.size());
    out.holdRefs.insert(out.holdRefs.end(), holdsEnded[index].begin(), holdsEnded[index].end());
    opHolds[index].until.end = static_cast<std::uint32_t>(out.holdRefs.size());
  }
  if (!out.holds.empty()) out.opHolds = std::move(opHolds);
}

/// One lane per pipeline device: its worker runs deviceOrder(d), every virtual stage's ops.
void placeOnLanes(const Schedule& schedule, CompiledSchedule& out) {
  const std::int64_t p = schedule.devices();
  out.lanes = narrow(p);
  for (std::int64_t j = 0; j < schedule.stages(); ++j) out.stageLane.push_back(narrow(schedule.deviceOf(j)));
  out.orderStart.push_back(0);
  const std::vector<bool> firstOfKind = schedule.firstOfKindOnStage();
  for (std::int64_t d = 0; d < p; ++d) {
    const std::vector<OpIndex>& order = schedule.deviceOrder(d);
    for (std::size_t position = 0; position < order.size(); ++position) {
      CompiledOp& c = out.ops[order[position]];
      c.lane = narrow(d);
      c.orderPosition = static_cast<std::uint32_t>(position);
      c.afterStageSwitch = schedule.followsAnotherStage(d, position);
      c.firstInStep = firstOfKind[order[position]];
      out.orderOps.push_back(static_cast<std::uint32_t>(order[position]));
    }
    out.orderStart.push_back(static_cast<std::uint32_t>(out.orderOps.size()));
  }
}

}  // namespace

CompiledSchedule compileSchedule(const Schedule& schedule, const SkipFacts& skipFacts, bool processPerDevice) {
  CompiledSchedule out;
  describeShape(schedule, out);
  const std::vector<Op>& ops = schedule.ops();
  OpEffectsBuilder builder(schedule, skipFacts, processPerDevice, out);
  out.ops.resize(ops.size());
  for (std::size_t index = 0; index < ops.size(); ++index) {
    describeOp(ops[index], out.ops[index]);
    builder.add(index, out.ops[index]);
  }
  if (processPerDevice) keepWhatRanksSent(schedule, builder.sentUntilLastOp(), builder.effects());
  linkSuccessors(ops, out);
  flattenEffects(builder.effects(), out);
  placeOnLanes(schedule, out);
  splitLateReleases(out);
  out.labels.reserve(ops.size());
  for (const Op& op : ops) out.labels.push_back(schedule.label(op));
  return out;
}

}  // namespace pipeprof::sim
