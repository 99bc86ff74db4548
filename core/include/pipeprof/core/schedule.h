// The GPipe schedule: clock cycles and the expansion of a candidate into per-partition ops.
//
// Vocabulary, used everywhere in pipeprof:
//   i  micro-batch   (0 <= i < m, m = chunks)
//   j  partition     (0 <= j < n, n = number of partitions)
//   k  clock         (cells (i, j) with i + j == k; m + n - 1 clocks)
//
// Forward runs by clock cycles; backward in reverse. For m = 3, n = 2, mode except_last:
//
//   clock:         0       1       2       3
//   partition 0  F(0,0) F(1,0) F(2,0)
//   partition 1         F(0,1) F(1,1) F(2,1)
//   then backward, per partition in order i = m-1 .. 0:
//   partition 1  B(2,1) R(1,1) B(1,1) R(0,1) B(0,1)
//   partition 0  B(2,0) R(1,0) B(1,0) R(0,0) B(0,0)
//
// Recompute rule (the runtime and the simulator both follow it): recompute(i, j) waits only
// for the previous op of partition j (backward(i+1, j), or the start of the backward pass
// for the first one) -- not for the gradient of micro-batch i -- so it overlaps the gradient
// copy from partition j+1. backward(i, j) then waits for recompute(i, j) and for the
// gradients of micro-batch i arriving from partition j+1 and from every partition that popped
// a skip tensor stashed in partition j.
//
// The backward pass starts when the whole forward output exists (the loss needs every
// micro-batch): the first backward-phase op of every partition depends on forward(m-1, n-1).
#pragma once

#include <pipeprof/core/checkpoint.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// One cell of the GPipe clock table: micro-batch i on partition j.
struct Cell {
  std::int64_t i = 0;
  std::int64_t j = 0;
  friend bool operator==(const Cell& a, const Cell& b) { return a.i == b.i && a.j == b.j; }
};

/// GPipe's clock cycles: for k in [0, m + n - 1) the cells (i, j) with i + j == k, in
/// increasing j. Throws std::invalid_argument when m or n is not positive.
std::vector<std::vector<Cell>> clockCycles(std::int64_t m, std::int64_t n);

/// The schedule family. Only GPipe exists today; 1F1B can be added without changing users of
/// Schedule, which only see op lists and dependencies.
enum class ScheduleKind { GPipe };

/// "gpipe". parseScheduleKind throws std::invalid_argument on unknown text.
std::string scheduleKindName(ScheduleKind kind);
ScheduleKind parseScheduleKind(const std::string& text);

/// A named skip tensor stashed by one layer and popped by a later one (layer indices into
/// the whole Sequential).
struct SkipRoute {
  std::string name;
  std::int64_t stashLayer = 0;
  std::int64_t popLayer = 0;
};

/// What a schedule is built from.
struct ScheduleSpec {
  std::vector<std::int64_t> balance;  ///< layers per partition; n = balance.size()
  std::int64_t chunks = 1;            ///< m
  Checkpoint checkpoint = Checkpoint::ExceptLast;
  bool training = true;  ///< false: forward only, nothing checkpointed (eval / no grad)
  std::vector<SkipRoute> skips;
  ScheduleKind kind = ScheduleKind::GPipe;
};

enum class OpKind { Forward, Recompute, Backward, Copy, SkipCopy };

/// "forward", "recompute", "backward", "copy", "skip-copy".
std::string opKindName(OpKind kind);

using OpIndex = std::size_t;

/// One unit of scheduled work.
struct Op {
  OpKind kind = OpKind::Forward;
  std::int64_t i = 0;  ///< micro-batch
  std::int64_t j = 0;  ///< partition that runs it; for copies the source partition
  std::int64_t toJ = 0;  ///< copies: destination partition; otherwise equal to j
  bool gradient = false;  ///< copies carrying gradients backward (toJ < j)
  std::int64_t skip = -1;  ///< SkipCopy: index into ScheduleSpec::skips; otherwise -1
  std::vector<OpIndex> deps;  ///< ops that must finish before this one starts

  bool isCompute() const { return kind == OpKind::Forward || kind == OpKind::Recompute || kind == OpKind::Backward; }
  bool isCopy() const { return !isCompute(); }
};

/// A candidate expanded into ops. Compute ops of a partition run in partitionOrder(j) order
/// on that partition's worker; copies run on the link from j to toJ as soon as their
/// dependencies are met.
class Schedule {
 public:
  /// Validates the spec (positive balance entries and chunks, skip layers inside the model,
  /// stash before pop) and expands it. Throws std::invalid_argument naming the bad values.
  static Schedule build(const ScheduleSpec& spec);

  const ScheduleSpec& spec() const { return spec_; }
  std::int64_t chunks() const { return spec_.chunks; }
  std::int64_t partitions() const { return static_cast<std::int64_t>(spec_.balance.size()); }
  std::int64_t layers() const;
  /// First layer index of partition j, and the partition that holds a layer.
  std::int64_t firstLayer(std::int64_t j) const;
  std::int64_t partitionOfLayer(std::int64_t layer) const;
  /// Whether micro-batch i is checkpointed (recomputed in backward).
  bool checkpointed(std::int64_t i) const;

  /// All ops in a topological order (every op after its dependencies).
  const std::vector<Op>& ops() const { return ops_; }
  const Op& op(OpIndex index) const { return ops_.at(index); }
  /// Compute ops of partition j in the order its worker runs them.
  const std::vector<OpIndex>& partitionOrder(std::int64_t j) const { return partitionOrder_.at(static_cast<std::size_t>(j)); }
  /// The compute op (kind, i, j), or nullopt (e.g. recompute of a kept micro-batch).
  std::optional<OpIndex> find(OpKind kind, std::int64_t i, std::int64_t j) const;
  /// Human-readable identity: "forward(2,1)", "copy(2,1->2)", "grad-copy(2,2->1)",
  /// "skip-copy(enc1,2,0->3)", "skip-grad-copy(enc1,2,3->0)". The same text is the span
  /// name in measured and predicted traces.
  std::string label(const Op& op) const;

 private:
  ScheduleSpec spec_;
  std::vector<std::int64_t> firstLayer_;
  std::vector<Op> ops_;
  std::vector<std::vector<OpIndex>> partitionOrder_;
};

}  // namespace pipeprof
