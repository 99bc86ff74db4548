// Schedules: the per-device op orders of a candidate (GPipe, 1F1B, interleaved 1F1B, and the
// zero-bubble ZB-H1, interleaved zero bubble and ZBV) and their ops.
//
// Vocabulary, used everywhere in pipeprof:
//   i  micro-batch        (0 <= i < m, m = chunks)
//   j  stage (partition)  (0 <= j < n, n = number of stages = balance.size())
//   d  device             (0 <= d < p; stage j runs on device j mod p, so device d holds the
//                          v = n / p stages d, d + p, d + 2p, ...: its virtual stages; under
//                          zbv device d holds stages d and 2p - 1 - d)
//   k  clock             (GPipe: cells (i, j) with i + j == k; m + n - 1 clocks)
//
// Ops: F forward(i,j), R recompute(i,j), L loss(i) (on the last stage, right after its
// forward), B backward(i,j), and the copies between stages. A device's worker runs its
// compute ops (every virtual stage's) in deviceOrder(d); copies run as soon as their inputs
// exist. The diagrams show the device orders for checkpoint mode never (no R).
//
// GPipe (v = 1): forward by clock cycles, then backward in reverse. m = 3, n = p = 2:
//
//   clock:       0      1      2      3
//   device 0   F(0,0) F(1,0) F(2,0)                      | B(2,0) B(1,0) B(0,0)
//   device 1          F(0,1) L0 F(1,1) L1 F(2,1) L2      | B(2,1) B(1,1) B(0,1)
//
//   The backward pass starts when the whole output exists: the first backward-phase op of
//   every stage waits for loss(m-1) (the loss needs every micro-batch).
//
// 1F1B (v = 1): device d runs w = min(p - d - 1, m) warm-up forwards, then pairs of one
// forward and one backward, then the remaining backwards. Device d holds at most
// min(p - d, m) micro-batches' activations (GPipe: m). m = 4, p = 2:
//
//   device 0   F0 F1 B0 F2 B1 F3 B2 B3
//   device 1   F0 L0 B0 F1 L1 B1 F2 L2 B2 F3 L3 B3
//
// Interleaved 1F1B (v >= 2, m a multiple of p; Megatron-LM's and torch's
// ScheduleInterleaved1F1B order): device d runs m * v forward and m * v backward ops. Its
// k-th forward is micro-batch i = (k / (p v)) p + k mod p of virtual stage c = (k mod p v) / p
// (stage j = c p + d); its k-th backward is the same micro-batch of virtual stage v - 1 - c.
// Warm-up: w = min(2 (p - d - 1) + (v - 1) p, m v) forwards; then forward k + w and
// backward k in turn; then the remaining backwards. The bubble shrinks from (p - 1)/m to
// (p - 1)/(v m). m = 4, p = 2, v = 2 (stages 0, 2 on device 0; 1, 3 on device 1; Fi.j):
//
//   device 0   F0.0 F1.0 F0.2 F1.2 F2.0 B0.2 F3.0 B1.2 F2.2 B0.0 F3.2 B1.0 B2.2 B3.2 B2.0 B3.0
//   device 1   F0.1 F1.1 F0.3 L0 B0.3 F1.3 L1 B1.3 F2.1 B0.1 F3.1 B1.1 F2.3 L2 B2.3 F3.3 L3 B3.3
//              B2.1 B3.1
//
// Zero bubble (zb1p: v = 1; interleaved-zb: v >= 2; torch's ScheduleInterleavedZeroBubble, Qi et al.
// 2024): each backward is split into I, backward-input(i, j), the gradient of the stage's inputs
// (what the previous stage waits for), and W, backward-weight(i, j), the gradients of its
// weights, which nothing waits for. The order is interleaved 1F1B's with I in B's place, over
// rounds of r = m / max(1, m / p) micro-batches instead of p (the k-th forward of device d is
// on virtual stage (k / r) mod v), with w = min((v - 1) r + p - d - 1, m v) warm-up forwards
// (one per hop from the last device, not two), and each W deferred: device d runs the W of its
// k-th backward right after its (k + d)-th I, and the d it still owes at the end. So the last
// devices, whose 1F1B holds few micro-batches, fill their cool-down bubble with W, and every
// device holds at most p micro-batches' state, 1F1B's peak, where a micro-batch waiting for its
// W keeps no more than one waiting for its I. m = 4, p = 2 (zb1p):
//
//   device 0   F0 F1 I0 W0 F2 I1 W1 F3 I2 W2 I3 W3
//   device 1   F0 L0 I0 F1 L1 I1 W0 F2 L2 I2 W1 F3 L3 I3 W2 W3
//
// zb1p may defer fewer (deferredWeights: device d runs its k-th W after its (k + e_d)-th I,
// 0 <= e_d <= d), where a W keeps more than the forward (each Linear's input and its output's
// gradient): the search picks the most each device can defer within 1F1B's memory. e = (0, 0):
//
//   device 1   F0 L0 I0 W0 F1 L1 I1 W1 F2 L2 I2 W2 F3 L3 I3 W3
//
// ZBV (zbv: v = 2; torch's ScheduleZBVZeroBubble, Qi et al.'s ZB-V): device d holds stages d
// and 2p - 1 - d, so a micro-batch goes down the devices and back up, and the last stage (its
// loss) is on device 0. Device d warms up with 2(p - d) - 1 forwards of its first stage, d
// pairs of forwards (second stage, then first), p - d rounds of F, I, W of its second stage;
// then rounds of F, I, W of the first stage and F, I, W of the second; it cools down with d
// pairs of I's and p - d rounds of I, W of its first stage, then the W's it still owes. The
// rounds run max(m, 2p - 1) micro-batches; the steps of those past m are dropped (torch leaves
// their slots idle). m = 4, p = 2 (stages 0, 3 on device 0; 1, 2 on device 1; Fi.j):
//
//   device 0   F0.0 F1.0 F2.0 F0.3 L0 I0.3 W0.3 F1.3 L1 I1.3 W1.3 F3.0 I0.0 W0.0 F2.3 L2 I2.3 W2.3
//              I1.0 W1.0 F3.3 L3 I3.3 W3.3 I2.0 W2.0 I3.0 W3.0
//   device 1   F0.1 F0.2 F1.1 F1.2 I0.2 W0.2 F2.1 I0.1 W0.1 F2.2 I1.2 W1.2 F3.1 I1.1 W1.1 F3.2
//              I2.2 W2.2 I2.1 I3.2 I3.1 W2.1 W3.2 W3.1
//
// Every schedule: recompute(i, j) of a checkpointed micro-batch comes right before
// backward(i, j) in the device order; it waits only for the previous op of its device (not
// for the gradient of micro-batch i), so it overlaps the gradient copy from stage j+1.
// backward(i, j) (or I) then waits for recompute(i, j), for loss(i) on the last stage, and for
// the gradients of micro-batch i arriving from stage j+1 and from every stage that popped a
// skip tensor stashed in stage j; W(i, j) waits for I(i, j). Checkpoint modes mean the same under every schedule (which
// micro-batches are recomputed: checkpointStop).
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/schedule_kind.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// A rank (one process per device) posts the receives of the op this many ahead of the one it
/// runs, so their data can arrive while it computes; at its first op, of the first ones up to it.
inline constexpr std::size_t kReceivesPostedAhead = 2;

/// One cell of the GPipe clock table: micro-batch i on partition j.
struct Cell {
  std::int64_t i = 0;
  std::int64_t j = 0;
  friend bool operator==(const Cell& a, const Cell& b) { return a.i == b.i && a.j == b.j; }
};

/// GPipe's clock cycles: for k in [0, m + n - 1) the cells (i, j) with i + j == k, in
/// increasing j. Throws std::invalid_argument when m or n is not positive.
std::vector<std::vector<Cell>> clockCycles(std::int64_t m, std::int64_t n);

enum class OpKind { Forward, Recompute, Backward, Copy, SkipCopy, Loss, BackwardInput, BackwardWeight };

/// One step of a device's order before recomputes and losses are inserted: the forward, the
/// backward, or a backward's input or weight half (I, W) of micro-batch i on stage j.
struct OrderStep {
  OpKind kind = OpKind::Forward;  ///< Forward, Backward, BackwardInput or BackwardWeight
  std::int64_t i = 0;
  std::int64_t j = 0;
  friend bool operator==(const OrderStep& a, const OrderStep& b) {
    return a.kind == b.kind && a.i == b.i && a.j == b.j;
  }
};

/// The forwards and backwards of every device of a training step, in the order its worker
/// runs them (the diagrams above): n stages, m micro-batches, v stages per device, p = n / v
/// devices; under zb1p device d defers deferredWeights[d] W's (empty: d, torch's order). Throws
/// std::invalid_argument with scheduleShapeError's or deferredWeightsError's text, or when n or
/// m is not positive.
std::vector<std::vector<OrderStep>> deviceSteps(ScheduleKind kind, std::int64_t n, std::int64_t m, std::int64_t v,
                                                const std::vector<std::int64_t>& deferredWeights = {});

/// A named skip tensor stashed by one layer and popped by a later one (layer indices into
/// the whole Sequential).
struct SkipRoute {
  std::string name;
  std::int64_t stashLayer = 0;
  std::int64_t popLayer = 0;
};

/// What a schedule is built from: a pipeline shape whose chunks is m, the micro-batches that
/// exist (Candidate::scheduleSpec), and what the step does with them.
struct ScheduleSpec : PipelineShape {
  bool training = true;  ///< false: forward only, nothing checkpointed (eval / no grad)
  std::vector<SkipRoute> skips;
};

/// B, I or W: the ops autograd's engine runs (on CUDA from its own thread, not the worker's).
inline bool isBackwardPass(OpKind kind) {
  return kind == OpKind::Backward || kind == OpKind::BackwardInput || kind == OpKind::BackwardWeight;
}

/// "forward", "recompute", "backward", "copy", "skip-copy", "loss", "backward-input",
/// "backward-weight".
std::string opKindName(OpKind kind);

using OpIndex = std::size_t;

/// One unit of scheduled work.
struct Op {
  OpKind kind = OpKind::Forward;
  std::int64_t i = 0;         ///< micro-batch
  std::int64_t j = 0;         ///< stage that runs it (loss: the last stage); for copies the source stage
  std::int64_t toJ = 0;       ///< copies: destination stage; otherwise equal to j
  bool gradient = false;      ///< copies carrying gradients backward (toJ < j)
  std::int64_t skip = -1;     ///< SkipCopy: index into ScheduleSpec::skips; otherwise -1
  std::vector<OpIndex> deps;  ///< ops that must finish before this one starts

  /// Ops a device's worker runs in its order: forward, recompute, backward (B, I or W) and loss.
  bool isCompute() const { return !isCopy(); }
  /// B or I: the op that consumes the gradients of micro-batch i arriving at stage j and makes
  /// those of its inputs.
  bool makesInputGradients() const { return kind == OpKind::Backward || kind == OpKind::BackwardInput; }
  bool isCopy() const { return kind == OpKind::Copy || kind == OpKind::SkipCopy; }
};

/// A candidate expanded into ops. The compute ops of device d run in deviceOrder(d) on that
/// device's worker; copies run on the link from stage j's device to stage toJ's as soon as
/// their dependencies are met. A training schedule has a loss(i) op per micro-batch; a
/// forward-only one (spec.training false) has neither losses nor backward ops.
class Schedule {
 public:
  /// Validates the spec (its shapeError(): positive balance entries and chunks, the shape of
  /// scheduleShapeError or of its custom order; skip layers inside the model, stash before pop)
  /// and expands it. Throws std::invalid_argument naming the bad values, or, for a custom order
  /// whose ranks wait for each other in a cycle, naming the ranks and actions of the cycle.
  static Schedule build(const ScheduleSpec& spec);

  const ScheduleSpec& spec() const { return spec_; }
  std::int64_t chunks() const { return spec_.chunks; }
  /// n: the number of stages (partitions).
  std::int64_t stages() const { return static_cast<std::int64_t>(spec_.balance.size()); }
  /// p: the number of devices (n / v).
  std::int64_t devices() const { return spec_.pipelineDevices(); }
  std::int64_t stagesPerDevice() const { return spec_.stagesPerDevice; }
  /// The device that runs stage j: j mod p, or zbv's V (spec().deviceOfStage(j)).
  std::int64_t deviceOf(std::int64_t j) const { return spec_.deviceOfStage(j); }
  std::int64_t layers() const;
  /// First layer index of partition j, and the partition that holds a layer.
  std::int64_t firstLayer(std::int64_t j) const;
  std::int64_t stageOfLayer(std::int64_t layer) const;
  /// Whether micro-batch i is checkpointed (recomputed in backward).
  bool checkpointed(std::int64_t i) const;

  /// All ops in a topological order (every op after its dependencies).
  const std::vector<Op>& ops() const { return ops_; }
  const Op& op(OpIndex index) const { return ops_.at(index); }
  /// Compute ops of device d (all its virtual stages, losses included) in the order its worker
  /// runs them.
  const std::vector<OpIndex>& deviceOrder(std::int64_t d) const { return deviceOrder_.at(static_cast<std::size_t>(d)); }
  /// Whether the op at `position` of deviceOrder(d) follows another stage's op there (its
  /// worker switches stages: two or more stages per device); false for the first.
  bool followsAnotherStage(std::int64_t d, std::size_t position) const {
    const std::vector<OpIndex>& order = deviceOrder(d);
    return position > 0 && ops_[order[position - 1]].j != ops_[order[position]].j;
  }
  /// Compute ops of stage j in the order they run (a subsequence of deviceOrder(deviceOf(j))).
  const std::vector<OpIndex>& stageOrder(std::int64_t j) const { return stageOrder_.at(static_cast<std::size_t>(j)); }
  /// Per op (indexed as ops()): whether it is its stage's first op of its kind in the step --
  /// the stage's first forward, first recompute, first backward, first I, first W -- which
  /// finds the stage's weights and state cold after the step's start (Profile::firstInStepScales).
  /// False for losses and copies.
  std::vector<bool> firstOfKindOnStage() const;
  /// The compute op (kind, i, j), or nullopt (e.g. recompute of a kept micro-batch). A loss
  /// is found at j = n - 1.
  std::optional<OpIndex> find(OpKind kind, std::int64_t i, std::int64_t j) const;
  /// Whether backwards are split into I then W (spec().splitsBackward(); a custom order may
  /// split some and not others).
  bool splitsBackward() const { return spec_.splitsBackward(); }
  /// The op that receives the gradients of micro-batch i at stage j: backward-input(i, j)
  /// where that backward is split, else backward(i, j); nullopt without backward ops.
  std::optional<OpIndex> gradientConsumer(std::int64_t i, std::int64_t j) const {
    if (splitsBackward()) {
      if (auto input = find(OpKind::BackwardInput, i, j)) return input;
    }
    return find(OpKind::Backward, i, j);
  }
  /// Human-readable identity: "forward(2,1)", "backward-input(2,1)", "loss(2)", "copy(2,1->2)", "grad-copy(2,2->1)",
  /// "skip-copy(enc1,2,0->3)", "skip-grad-copy(enc1,2,3->0)". The same text is the span
  /// name in measured and predicted traces.
  std::string label(const Op& op) const;
  /// A compute op as torch's CSV names it ("1B0", "3I2"); losses and recomputes by label.
  std::string actionName(const Op& op) const;

 private:
  /// The message for ops that wait for each other in a cycle (each for the next, the last for
  /// the first): a custom order that cannot run, rank by rank.
  std::string describeCycle(const std::vector<Op>& ops, const std::vector<OpIndex>& cycle) const;

  ScheduleSpec spec_;
  std::vector<std::int64_t> firstLayer_;
  std::vector<Op> ops_;
  std::vector<std::vector<OpIndex>> deviceOrder_;
  std::vector<std::vector<OpIndex>> stageOrder_;
};

}  // namespace pipeprof
