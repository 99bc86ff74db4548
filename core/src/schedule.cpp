// The GPipe schedule: clock cycles and the expansion of a candidate into per-partition ops.
//
// Schedule::build works in three steps, so that another schedule family (1F1B) only has to
// add its own partition orders:
//   1. computeSlots(kind)  the compute ops of every partition in the order its worker runs
//                          them, listed in one global emission order;
//   2. addOps              one op per slot, each followed by the copies it produces;
//   3. addDependencies     the same rules for every kind: device order, activations and
//                          skip tensors forward, gradients backward, recompute before backward;
// and a final stable topological sort guarantees ops() lists every op after its dependencies.
#include <pipeprof/core/schedule.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace pipeprof {
namespace {

/// A compute op before it becomes an Op: kind, micro-batch, partition, and whether it is the
/// first op of its partition's backward phase (which waits for the end of the forward pass).
struct Slot {
  OpKind kind;
  std::int64_t i;
  std::int64_t j;
  bool waitsForForwardPass;
};

std::string formatList(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t index = 0; index < values.size(); ++index) {
    if (index > 0) text += ", ";
    text += std::to_string(values[index]);
  }
  return text + "]";
}

/// GPipe: forward by clock cycles, then per partition backward for i = m-1 .. 0 with
/// recompute(i, j) right before backward(i, j) for checkpointed micro-batches. Backward slots
/// are emitted by reversed clocks (decreasing j within a clock) so the list is topological.
std::vector<Slot> gpipeSlots(std::int64_t m, std::int64_t n, bool training, std::int64_t stop) {
  std::vector<Slot> slots;
  auto clocks = clockCycles(m, n);
  for (const auto& cells : clocks) {
    for (const Cell& cell : cells) slots.push_back({OpKind::Forward, cell.i, cell.j, false});
  }
  if (!training) return slots;
  for (auto clock = clocks.rbegin(); clock != clocks.rend(); ++clock) {
    for (auto cell = clock->rbegin(); cell != clock->rend(); ++cell) {
      bool first = cell->i == m - 1;
      if (cell->i < stop) {
        slots.push_back({OpKind::Recompute, cell->i, cell->j, first});
        first = false;
      }
      slots.push_back({OpKind::Backward, cell->i, cell->j, first});
    }
  }
  return slots;
}

std::vector<Slot> computeSlots(const ScheduleSpec& spec, std::int64_t stop) {
  auto n = static_cast<std::int64_t>(spec.balance.size());
  switch (spec.kind) {
    case ScheduleKind::GPipe: return gpipeSlots(spec.chunks, n, spec.training, stop);
  }
  throw std::logic_error("unknown schedule kind");
}

void validate(const ScheduleSpec& spec) {
  if (spec.balance.empty()) {
    throw std::invalid_argument("balance must have at least one partition (balance: [])");
  }
  for (std::int64_t layers : spec.balance) {
    if (layers <= 0) {
      throw std::invalid_argument("all balance numbers must be positive integer (balance: " +
                                  formatList(spec.balance) + ")");
    }
  }
  if (spec.chunks <= 0) {
    throw std::invalid_argument("number of chunks must be positive integer (chunks: " +
                                std::to_string(spec.chunks) + ")");
  }
  std::int64_t layerCount = std::accumulate(spec.balance.begin(), spec.balance.end(), std::int64_t{0});
  std::string range = "(layers: 0.." + std::to_string(layerCount - 1) + ")";
  for (std::size_t index = 0; index < spec.skips.size(); ++index) {
    const SkipRoute& skip = spec.skips[index];
    std::string route = "skip route '" + skip.name + "'";
    if (skip.name.empty()) {
      throw std::invalid_argument("skip route #" + std::to_string(index) + " has an empty name");
    }
    for (std::size_t other = 0; other < index; ++other) {
      if (spec.skips[other].name == skip.name) {
        throw std::invalid_argument("duplicate " + route + ": skip names must be distinct");
      }
    }
    if (skip.stashLayer < 0 || skip.stashLayer >= layerCount) {
      throw std::invalid_argument(route + ": stash layer " + std::to_string(skip.stashLayer) +
                                  " is outside the model " + range);
    }
    if (skip.popLayer < 0 || skip.popLayer >= layerCount) {
      throw std::invalid_argument(route + ": pop layer " + std::to_string(skip.popLayer) +
                                  " is outside the model " + range);
    }
    if (skip.stashLayer >= skip.popLayer) {
      throw std::invalid_argument(route + ": stash layer " + std::to_string(skip.stashLayer) +
                                  " must come before pop layer " + std::to_string(skip.popLayer));
    }
  }
}

/// Reorders ops so every op follows its dependencies, keeping the given order where it
/// already does (Kahn's algorithm, smallest index first). Dependencies are renumbered.
std::vector<Op> topologicalSort(std::vector<Op> ops) {
  std::vector<std::vector<OpIndex>> users(ops.size());
  std::vector<std::size_t> pending(ops.size(), 0);
  for (OpIndex index = 0; index < ops.size(); ++index) {
    pending[index] = ops[index].deps.size();
    for (OpIndex dep : ops[index].deps) users[dep].push_back(index);
  }
  std::priority_queue<OpIndex, std::vector<OpIndex>, std::greater<>> ready;
  for (OpIndex index = 0; index < ops.size(); ++index) {
    if (pending[index] == 0) ready.push(index);
  }
  std::vector<OpIndex> newIndex(ops.size());
  std::vector<OpIndex> order;
  order.reserve(ops.size());
  while (!ready.empty()) {
    OpIndex index = ready.top();
    ready.pop();
    newIndex[index] = order.size();
    order.push_back(index);
    for (OpIndex user : users[index]) {
      if (--pending[user] == 0) ready.push(user);
    }
  }
  if (order.size() != ops.size()) throw std::logic_error("schedule has a dependency cycle");
  std::vector<Op> sorted;
  sorted.reserve(ops.size());
  for (OpIndex index : order) {
    Op op = std::move(ops[index]);
    for (OpIndex& dep : op.deps) dep = newIndex[dep];
    std::sort(op.deps.begin(), op.deps.end());
    sorted.push_back(std::move(op));
  }
  return sorted;
}

}  // namespace

std::vector<std::vector<Cell>> clockCycles(std::int64_t m, std::int64_t n) {
  if (m <= 0 || n <= 0) {
    throw std::invalid_argument("clock cycles need positive m and n (m: " + std::to_string(m) +
                                ", n: " + std::to_string(n) + ")");
  }
  std::vector<std::vector<Cell>> clocks;
  for (std::int64_t k = 0; k < m + n - 1; ++k) {
    std::vector<Cell> cells;
    for (std::int64_t j = std::max<std::int64_t>(0, k - m + 1); j <= std::min(k, n - 1); ++j) {
      cells.push_back({k - j, j});
    }
    clocks.push_back(std::move(cells));
  }
  return clocks;
}

std::string scheduleKindName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return "gpipe";
  }
  return "unknown";
}

ScheduleKind parseScheduleKind(const std::string& text) {
  if (text == "gpipe") return ScheduleKind::GPipe;
  throw std::invalid_argument("invalid schedule '" + text + "': expected gpipe");
}

std::string opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return "forward";
    case OpKind::Recompute: return "recompute";
    case OpKind::Backward: return "backward";
    case OpKind::Copy: return "copy";
    case OpKind::SkipCopy: return "skip-copy";
  }
  return "unknown";
}

Schedule Schedule::build(const ScheduleSpec& spec) {
  validate(spec);
  Schedule schedule;
  schedule.spec_ = spec;
  std::int64_t first = 0;
  for (std::int64_t layers : spec.balance) {
    schedule.firstLayer_.push_back(first);
    first += layers;
  }
  const std::int64_t m = spec.chunks;
  const std::int64_t n = schedule.partitions();
  const std::int64_t stop = checkpointStop(spec.checkpoint, m, spec.training);

  struct SkipSpan {
    std::int64_t stashJ;
    std::int64_t popJ;
  };
  std::vector<SkipSpan> spans;
  for (const SkipRoute& skip : spec.skips) {
    spans.push_back({schedule.partitionOfLayer(skip.stashLayer), schedule.partitionOfLayer(skip.popLayer)});
  }

  // Step 2: ops in emission order, with lookup tables for the dependency rules.
  using Key = std::tuple<std::int64_t, std::int64_t>;  // (i, destination j)
  std::map<std::tuple<OpKind, std::int64_t, std::int64_t>, OpIndex> compute;
  std::map<Key, std::vector<OpIndex>> forwardInputs;   // copies into forward(i, j)
  std::map<Key, std::vector<OpIndex>> backwardInputs;  // grad copies into backward(i, j)
  std::vector<std::vector<OpIndex>> order(static_cast<std::size_t>(n));
  std::vector<Slot> slots = computeSlots(spec, stop);
  std::vector<Op>& ops = schedule.ops_;
  auto addCopy = [&](std::int64_t i, std::int64_t from, std::int64_t to, bool gradient, std::int64_t skip,
                     OpIndex source) {
    Op copy;
    copy.kind = skip < 0 ? OpKind::Copy : OpKind::SkipCopy;
    copy.i = i;
    copy.j = from;
    copy.toJ = to;
    copy.gradient = gradient;
    copy.skip = skip;
    copy.deps = {source};
    ops.push_back(copy);
    (gradient ? backwardInputs : forwardInputs)[{i, to}].push_back(ops.size() - 1);
  };
  for (const Slot& slot : slots) {
    Op op;
    op.kind = slot.kind;
    op.i = slot.i;
    op.j = slot.j;
    op.toJ = slot.j;
    const auto j = static_cast<std::size_t>(slot.j);
    if (!order[j].empty()) op.deps.push_back(order[j].back());
    if (slot.waitsForForwardPass) op.deps.push_back(compute.at({OpKind::Forward, m - 1, n - 1}));
    ops.push_back(op);
    OpIndex index = ops.size() - 1;
    compute[{slot.kind, slot.i, slot.j}] = index;
    order[j].push_back(index);
    if (slot.kind == OpKind::Forward) {
      if (slot.j + 1 < n) addCopy(slot.i, slot.j, slot.j + 1, false, -1, index);
      for (std::size_t s = 0; s < spans.size(); ++s) {
        if (spans[s].stashJ == slot.j && spans[s].popJ != slot.j) {
          addCopy(slot.i, slot.j, spans[s].popJ, false, static_cast<std::int64_t>(s), index);
        }
      }
    } else if (slot.kind == OpKind::Backward) {
      if (slot.j > 0) addCopy(slot.i, slot.j, slot.j - 1, true, -1, index);
      for (std::size_t s = 0; s < spans.size(); ++s) {
        if (spans[s].popJ == slot.j && spans[s].stashJ != slot.j) {
          addCopy(slot.i, slot.j, spans[s].stashJ, true, static_cast<std::int64_t>(s), index);
        }
      }
    }
  }

  // Step 3: data dependencies of compute ops (device order was added above).
  for (Op& op : ops) {
    if (op.kind == OpKind::Forward) {
      auto inputs = forwardInputs.find({op.i, op.j});
      if (inputs != forwardInputs.end()) op.deps.insert(op.deps.end(), inputs->second.begin(), inputs->second.end());
    } else if (op.kind == OpKind::Backward) {
      auto recompute = compute.find({OpKind::Recompute, op.i, op.j});
      if (recompute != compute.end()) op.deps.push_back(recompute->second);
      auto inputs = backwardInputs.find({op.i, op.j});
      if (inputs != backwardInputs.end()) op.deps.insert(op.deps.end(), inputs->second.begin(), inputs->second.end());
    }
    std::sort(op.deps.begin(), op.deps.end());
    op.deps.erase(std::unique(op.deps.begin(), op.deps.end()), op.deps.end());
  }

  ops = topologicalSort(std::move(ops));
  schedule.partitionOrder_.assign(static_cast<std::size_t>(n), {});
  for (OpIndex index = 0; index < ops.size(); ++index) {
    if (ops[index].isCompute()) schedule.partitionOrder_[static_cast<std::size_t>(ops[index].j)].push_back(index);
  }
  return schedule;
}

std::int64_t Schedule::layers() const {
  return std::accumulate(spec_.balance.begin(), spec_.balance.end(), std::int64_t{0});
}

std::int64_t Schedule::firstLayer(std::int64_t j) const {
  if (j < 0 || j >= partitions()) {
    throw std::out_of_range("partition " + std::to_string(j) + " is outside 0.." + std::to_string(partitions() - 1));
  }
  return firstLayer_[static_cast<std::size_t>(j)];
}

std::int64_t Schedule::partitionOfLayer(std::int64_t layer) const {
  if (layer < 0 || layer >= layers()) {
    throw std::out_of_range("layer " + std::to_string(layer) + " is outside 0.." + std::to_string(layers() - 1));
  }
  auto next = std::upper_bound(firstLayer_.begin(), firstLayer_.end(), layer);
  return static_cast<std::int64_t>(next - firstLayer_.begin()) - 1;
}

bool Schedule::checkpointed(std::int64_t i) const {
  return i >= 0 && i < checkpointStop(spec_.checkpoint, spec_.chunks, spec_.training);
}

std::optional<OpIndex> Schedule::find(OpKind kind, std::int64_t i, std::int64_t j) const {
  if (j < 0 || j >= partitions()) return std::nullopt;
  for (OpIndex index : partitionOrder_[static_cast<std::size_t>(j)]) {
    if (ops_[index].kind == kind && ops_[index].i == i) return index;
  }
  return std::nullopt;
}

std::string Schedule::label(const Op& op) const {
  std::string i = std::to_string(op.i);
  std::string route = std::to_string(op.j) + "->" + std::to_string(op.toJ);
  switch (op.kind) {
    case OpKind::Forward:
    case OpKind::Recompute:
    case OpKind::Backward:
      return opKindName(op.kind) + "(" + i + "," + std::to_string(op.j) + ")";
    case OpKind::Copy:
      return std::string(op.gradient ? "grad-copy(" : "copy(") + i + "," + route + ")";
    case OpKind::SkipCopy: {
      std::string name = op.skip >= 0 && static_cast<std::size_t>(op.skip) < spec_.skips.size()
                             ? spec_.skips[static_cast<std::size_t>(op.skip)].name
                             : std::to_string(op.skip);
      return std::string(op.gradient ? "skip-grad-copy(" : "skip-copy(") + name + "," + i + "," + route + ")";
    }
  }
  return "unknown";
}

}  // namespace pipeprof
