// A Schedule flattened into arrays the engine walks without allocating: ops, dependencies, memory effects.
#pragma once

#include <pipeprof/core/schedule.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::sim {

/// Which per-candidate value a slot holds. Slots are laid out per size class (0: a full
/// micro-batch, 1: the last micro-batch, whose size may be the remainder); see SlotLayout.
struct SlotLayout {
  std::int32_t n = 0;      ///< stages
  std::int32_t skips = 0;  ///< skip routes

  // Duration slots.
  std::int32_t durationsPerClass() const { return 7 * n + 2 * skips + 3; }
  /// A forward that keeps its graph (training, not checkpointed), and a recompute.
  std::int32_t forwardNs(std::int32_t j) const { return j; }
  std::int32_t backwardNs(std::int32_t j) const { return n + j; }
  std::int32_t copyNs(std::int32_t lowJ, bool gradient) const { return (gradient ? 3 : 2) * n + lowJ; }
  std::int32_t skipCopyNs(std::int32_t s, bool gradient) const { return 4 * n + (gradient ? skips : 0) + s; }
  /// A step's first loss op: the loss's forward (0 when the profile has no loss).
  std::int32_t lossNs() const { return 4 * n + 2 * skips; }
  /// The last stage's recompute, which computes the loss again with its graph (a later call).
  std::int32_t recomputeWithLossNs() const { return 4 * n + 2 * skips + 1; }
  /// Every later loss op of the step: the loss's forward less its cold start
  /// (LossProfile::coldStartNs).
  std::int32_t laterLossNs() const { return 7 * n + 2 * skips + 2; }
  /// A split backward's halves (zero-bubble schedules): I, with the loss's backward on the last
  /// stage, and W.
  std::int32_t backwardInputNs(std::int32_t j) const { return 4 * n + 2 * skips + 2 + j; }
  std::int32_t backwardWeightNs(std::int32_t j) const { return 5 * n + 2 * skips + 2 + j; }
  /// A forward that keeps no graph (a checkpointed micro-batch, or not training):
  /// CostSample::forwardWithoutGraphNs.
  std::int32_t forwardNoGradNs(std::int32_t j) const { return 6 * n + 2 * skips + 2 + j; }

  // Byte slots. A compute op's transient peak is what it holds above its starting level at its
  // busiest layer (docs/simulator.md, "Memory model").
  std::int32_t bytesPerClass() const { return splitSlot(kSplitSlots + 3, 0); }
  std::int32_t saved(std::int32_t j) const { return n + j; }
  std::int32_t output(std::int32_t j) const { return 2 * n + j; }
  /// The part of j's output (its last layer's) that no layer's saved bytes hold: the stage keeps
  /// its output until its backward, as the root of its graph (and j + 1 as its input).
  std::int32_t unsavedOutput(std::int32_t j) const { return 7 * n + j; }
  std::int32_t copyBytes(std::int32_t lowJ, bool gradient) const { return (gradient ? 4 : 3) * n + lowJ; }
  /// A forward that keeps its graph (training, not checkpointed) or a recompute: its peak when
  /// it falls in the op's first half (held from the start), else 0 and gradForwardPeakAtEnd.
  std::int32_t gradForwardPeak(std::int32_t j) const { return j; }
  /// A forward that keeps no graph (a checkpointed micro-batch, or not training).
  std::int32_t noGradForwardPeak(std::int32_t j) const { return 5 * n + j; }
  std::int32_t backwardPeak(std::int32_t j) const { return 6 * n + j; }
  std::int32_t skipBytes(std::int32_t s) const { return 8 * n + s; }
  std::int32_t skipCopyBytes(std::int32_t s, bool gradient) const { return 8 * n + (gradient ? 2 : 1) * skips + s; }
  /// The part of a skip the backward graph does not save (a micro-batch not checkpointed).
  std::int32_t skipUnsavedBytes(std::int32_t s) const { return 8 * n + 3 * skips + s; }
  /// The gradient of a skip that crosses stages: the popping stage's backward makes it
  /// (the popped skip is a leaf there) and holds it until the stash stage's backward ends;
  /// less, for a whole backward that hands the skip the gradient it hands its input
  /// (SkipProfile::gradientSharedInBackward), what the gradient of the stage's input holds
  /// where the pop is the stage's first layer and the skip comes from the one before.
  std::int32_t skipGradBytes(std::int32_t s) const { return 8 * n + 4 * skips + 3 + s; }
  /// A split backward's share of it: where the popping layer hands the skip the gradient of its
  /// input (SkipProfile::gradientSharedWithInput), I makes only the rest (unshared). The shared
  /// part is counted where that gradient is: what the layer before keeps for W, which outlives
  /// W (a hold) until the stash stage's backward; or, for a pop that is the stage's
  /// first layer, the gradient of the stage's input (cost_model.cpp).
  std::int32_t skipGradUnsharedBytes(std::int32_t s) const { return 8 * n + 5 * skips + 3 + s; }
  std::int32_t skipGradSharedBytes(std::int32_t s) const { return 8 * n + 6 * skips + 3 + s; }
  // A split backward's slots (I and W), kSplitSlots per stage after the skips' slots.
  static constexpr std::int32_t kSplitSlots = 20;
  std::int32_t splitSlot(std::int32_t k, std::int32_t j) const { return (8 + k) * n + 7 * skips + 3 + j; }
  /// What a split backward's I keeps for its W (BackwardSplit::weightSavedBytes), freed by W.
  std::int32_t weightSaved(std::int32_t j) const { return splitSlot(0, j); }
  /// I's end moves what stage j holds from saved(j) to weightSaved(j) at once (the two
  /// share tensors: a Linear's input is the ReLU output before it saved): it frees
  /// max(0, saved - weightSaved) and allocates max(0, weightSaved - saved).
  std::int32_t savedFreedByInput(std::int32_t j) const { return splitSlot(1, j); }
  std::int32_t weightSavedGrowth(std::int32_t j) const { return splitSlot(2, j); }
  /// W's transient: one layer's weights' gradients at a time, last layer first, each layer's
  /// weight_workspace_bytes less what the later layers' nodes let go by then.
  std::int32_t weightBackwardPeak(std::int32_t j) const { return splitSlot(3, j); }
  /// I's transient: unlike B, I keeps every saved tensor until it ends (W needs some, and the
  /// engine runs keeping the graph), and the gradients each layer it passed captured for W
  /// (input_kept_bytes) stay.
  std::int32_t backwardInputPeak(std::int32_t j) const { return splitSlot(4, j); }
  /// The gradient of j's output, received from j + 1, that j's W needs (j's last layer has
  /// weights, or j = 0, whose I computes nothing): held from I(i, j) until W(i, j), on j + 1
  /// when the devices share the tensor (a zero-cost link: the gradient of j + 1's input), else
  /// on j as the copy's buffer. weightSaved(j) does not count it.
  std::int32_t gradientHeldOnSender(std::int32_t j) const { return splitSlot(5, j); }
  std::int32_t gradientHeldOnReceiver(std::int32_t j) const { return splitSlot(6, j); }
  /// I hands that gradient to W rather than freeing it: at I's end j + 1 frees the gradient of
  /// its input (output(j)) less gradientHeldOnSender(j), and j the copy's buffer less
  /// gradientHeldOnReceiver(j) -- the held part moves from one count to the other, never
  /// counted twice at that instant.
  std::int32_t outputGradientFreedByInput(std::int32_t j) const { return splitSlot(16, j); }
  std::int32_t gradientCopyFreedByInput(std::int32_t j) const { return splitSlot(17, j); }
  /// j's input, where it came through a copy (its buffer on j), as far as j's W keeps it (the
  /// amount inputHeldForWeight counts where the input is j - 1's output itself): I's end frees
  /// the buffer less it (inputCopyFreedByInput), W the rest; weightSaved(j) does not count it.
  std::int32_t inputCopyHeldForWeight(std::int32_t j) const { return splitSlot(18, j); }
  std::int32_t inputCopyFreedByInput(std::int32_t j) const { return splitSlot(19, j); }
  /// The peak of a forward that keeps its graph, or of a recompute, where it falls in the op's
  /// second half (the saved tensors build up layer by layer): reached at the op's end, after
  /// whatever other devices freed meanwhile (CompiledOp::endTransient). After the split slots,
  /// though every schedule has it.
  std::int32_t gradForwardPeakAtEnd(std::int32_t j) const { return splitSlot(kSplitSlots, j); }
  /// The peak of a backward (B, or a split backward's I) that its first layer reaches as it
  /// allocates the gradient of the stage's input, at the op's end, after whatever other devices
  /// freed meanwhile, where it tops the rest of the op (backwardPeak and backwardInputPeak then
  /// hold that layer's peak less what that last allocation adds); else 0.
  std::int32_t backwardPeakAtEnd(std::int32_t j) const { return splitSlot(kSplitSlots + 1, j); }
  std::int32_t backwardInputPeakAtEnd(std::int32_t j) const { return splitSlot(kSplitSlots + 2, j); }
  /// j's input, where it is j - 1's output itself, as far as the W of the layer that takes it
  /// (the first, or the one behind stash layers that pass it on) keeps it: a
  /// checkpointed micro-batch's, which j - 1 holds for j's recompute (output(j - 1)), stays on
  /// j - 1 until W(i, j); I(i, j) frees the rest of it.
  std::int32_t inputHeldForWeight(std::int32_t j) const { return splitSlot(7, j); }
  std::int32_t checkpointedInputFreedByInput(std::int32_t j) const { return splitSlot(8, j); }
  /// W's transient for a checkpointed micro-batch (differs on the first stage, whose W is the
  /// whole backward of a recomputed graph that alone holds its output).
  std::int32_t checkpointedWeightBackwardPeak(std::int32_t j) const { return splitSlot(9, j); }
  /// j's input, where it is j - 1's output itself, as far as j's W keeps it (inputHeldForWeight)
  /// for a micro-batch not checkpointed: j - 1's graph holds it too, and j - 1 frees it with its
  /// I (or, on the first stage when its last layer saved it, its W); a hold keeps it on j - 1
  /// until W(i, j) where that comes later. One slot per releasing op (the other is 0).
  std::int32_t outputHeldAfterInput(std::int32_t j) const { return splitSlot(10, j); }
  std::int32_t outputHeldAfterWeight(std::int32_t j) const { return splitSlot(11, j); }
  /// One process per device, a micro-batch not checkpointed: what j sent another rank (its
  /// output, a skip it stashed) stays with the send until the rank's last op ends. The part of
  /// it among j's saved bytes (sentSaved) is not freed by B, I or W, which free savedUnsent,
  /// savedFreedByInputUnsent and weightSavedUnsent instead: I what it frees of it first, W the
  /// rest (slots of every stage, not only of a split backward; resolved only for one process
  /// per device, the only case that reads them).
  std::int32_t sentSaved(std::int32_t j) const { return splitSlot(12, j); }
  std::int32_t savedUnsent(std::int32_t j) const { return splitSlot(13, j); }
  std::int32_t savedFreedByInputUnsent(std::int32_t j) const { return splitSlot(14, j); }
  std::int32_t weightSavedUnsent(std::int32_t j) const { return splitSlot(15, j); }
  /// What the loss changes in what the last stage holds until backward(i, n-1): what its
  /// graph keeps, less the output when the graph lets it go (may be negative).
  std::int32_t lossHeld() const { return 8 * n + 4 * skips; }
  /// A loss op's peak above its start (its graph's bytes and its forward's transient).
  std::int32_t lossPeak() const { return 8 * n + 4 * skips + 1; }
  /// The last stage's recompute: its layers' peak, or the loss's on top of their graph.
  std::int32_t recomputeWithLossPeak() const { return 8 * n + 4 * skips + 2; }
};

/// One memory change: `slot`'s bytes on stage j.
struct MemoryEffect {
  std::int32_t j = 0;
  std::int32_t slot = 0;  ///< absolute byte slot (size class already applied)
};

/// No op (an op index's "none").
inline constexpr std::uint32_t kNoOp = ~std::uint32_t{0};

/// Half-open index range into one of the CompiledSchedule's flat arrays.
struct Range {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

struct CompiledOp {
  OpKind kind = OpKind::Forward;
  std::int32_t i = 0;
  std::int32_t j = 0;
  std::int32_t toJ = 0;
  std::int32_t durationSlot = 0;  ///< absolute duration slot (size class already applied)
  std::uint32_t dependencyCount = 0;
  std::int32_t lane = 0;            ///< compute ops: the pipeline device d (Schedule::deviceOf) whose worker runs it
  std::uint32_t orderPosition = 0;  ///< compute ops: position in deviceOrder(lane)
  /// Compute ops: the op before it in deviceOrder(lane) is another stage's (Profile::stageSwitchScales).
  bool afterStageSwitch = false;
  /// Compute ops: the first of its kind on its stage in the step (Schedule::firstOfKindOnStage;
  /// Profile::firstInStepScales).
  bool firstInStep = false;
  Range successors;
  Range startAlloc;    ///< at op start: allocations (copy buffers)
  Range transient;     ///< allocated at op start, released first at op end (a compute op's transient peak)
  Range endTransient;  ///< at op end, then: a transient peak reached there, allocated and released at once
  Range endAlloc;      ///< at op end, then: allocations (saved, outputs, gradients)
  Range endRelease;    ///< at op end, last: releases (freed tensors) of the op's own lane
                       ///< (another lane's: CompiledSchedule::opLate), then the op's holds

  /// Ops that run on a device's worker in its order (forward, recompute, backward (B, I, W), loss).
  bool isCompute() const { return kind != OpKind::Copy && kind != OpKind::SkipCopy; }
  /// B, I or W: launched from the autograd engine's thread, not the worker's.
  bool isBackwardPass() const { return pipeprof::isBackwardPass(kind); }
};

/// The structure of one schedule, independent of the balance's layer counts (it depends on
/// the schedule family, n, v, the micro-batch count, the checkpoint mode, training, and the
/// stages of skip routes).
struct CompiledSchedule {
  SlotLayout layout;
  std::int32_t chunks = 0;      ///< micro-batch count m
  std::int32_t lanes = 0;       ///< p: pipeline devices, one worker lane each (stage j on lane deviceOf(j))
  bool training = true;         ///< false: forward only (no backward ops)
  bool splitsBackward = false;  ///< training with I and W ops instead of B (zero-bubble schedules)
  std::vector<CompiledOp> ops;
  std::vector<std::uint32_t> successors;
  std::vector<MemoryEffect> effects;
  /// A tensor two ops free, whichever ends last: the first to end frees it (its releases), and
  /// a hold allocates it again until the other ends, where that one is still to come.
  struct Hold {
    MemoryEffect effect;
    std::uint32_t untilOp = 0;
  };
  std::vector<Hold> holds;
  std::vector<std::uint32_t> holdRefs;  ///< hold indices, by the op that ends them
  /// Per op, where `holds` is not empty (else empty: the search's ops stay small): at its end,
  /// after its releases, the holds it starts (into `holds`: what it freed, kept on until
  /// another op ends, where that has not ended yet) and those it ends (into `holdRefs`).
  struct OpHolds {
    Range from;
    Range until;
  };
  std::vector<OpHolds> opHolds;
  std::vector<std::uint32_t> orderOps;    ///< deviceOrder(d) for every lane d, concatenated
  std::vector<std::uint32_t> orderStart;  ///< lanes + 1 offsets into orderOps
  std::vector<std::int32_t> stageLane;    ///< per stage j: its lane, Schedule::deviceOf(j)
  /// Per op, where some compute op frees a tensor another lane's stage allocated or ends such a
  /// hold (else empty: the search's ops stay small): those releases, seen late by their lane
  /// (late_releases.h), and the late releases this op is the first of its lane to wait for (into
  /// lateSeenEffects: an effect's index, or effects.size() + a hold's), applied at its start
  /// where still pending.
  struct OpLate {
    Range release;
    Range seen;
  };
  std::vector<OpLate> opLate;
  std::vector<std::uint32_t> lateSeenEffects;  ///< effect indices, then effects.size() + hold indices
  std::vector<std::string> labels;             ///< Schedule::label of every op
  std::vector<std::int32_t> skipStashStage;
  std::vector<std::int32_t> skipPopStage;

  /// The op after compute op `op` in its lane's order, or kNoOp when it is the lane's last.
  std::uint32_t nextInLane(std::uint32_t op) const {
    const CompiledOp& c = ops[op];
    const auto lane = static_cast<std::size_t>(c.lane);
    const std::uint32_t index = orderStart[lane] + c.orderPosition + 1;
    return index < orderStart[lane + 1] ? orderOps[index] : kNoOp;
  }
  /// The op before compute op `op` in its lane's order, or kNoOp when it is the lane's first.
  std::uint32_t previousInLane(std::uint32_t op) const {
    const CompiledOp& c = ops[op];
    return c.orderPosition == 0 ? kNoOp : orderOps[orderStart[static_cast<std::size_t>(c.lane)] + c.orderPosition - 1];
  }
};

/// What the profile says of each skip of a spec; missing entries read false.
struct SkipFacts {
  /// SkipProfile::gradientSharedWithInput: only those skips' gradients get a hold past W
  /// (skipGradSharedBytes).
  std::vector<bool> gradientSharedWithInput;
  /// CostModel::stashReturnsItsInput: where such a stash opens its stage, the skip is the
  /// stage's input.
  std::vector<bool> stashReturnsItsInput;
};

/// Flattens a built schedule. Memory effects follow docs/simulator.md ("Memory model").
/// `processPerDevice`: every pipeline device is a rank of its own (Cluster::processPerDevice).
CompiledSchedule compileSchedule(const Schedule& schedule, const SkipFacts& skipFacts = {},
                                 bool processPerDevice = false);

}  // namespace pipeprof::sim
