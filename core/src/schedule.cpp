// Schedules: GPipe's clock cycles, every family's device orders, and their expansion into ops.
//
// Schedule::build works in three steps, so that a schedule family only has to add its own
// device orders (deviceSteps):
//   1. computeSlots(kind)  the compute ops of every device in the order its worker runs
//                          them (recomputes and losses inserted), listed in one emission order;
//   2. addOps              one op per slot, each followed by the copies it produces;
//   3. addDependencies     the same rules for every kind: device order, activations and
//                          skip tensors forward, gradients backward, recompute before backward;
// and a final stable topological sort guarantees ops() lists every op after its dependencies.
#include <pipeprof/core/schedule.h>

#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/schedule_csv.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace pipeprof {
namespace {

/// A compute op before it becomes an Op: kind, micro-batch, stage, and whether it is the
/// first op of its stage's GPipe backward phase (which waits for the end of the forward pass).
struct Slot {
  OpKind kind;
  std::int64_t i;
  std::int64_t j;
  bool waitsForForwardPass;
};

/// GPipe: forward by clock cycles (a loss right after each forward of the last stage), then
/// per stage backward for i = m-1 .. 0 with recompute(i, j) right before backward(i, j) for
/// checkpointed micro-batches. Backward slots are emitted by reversed clocks (decreasing j
/// within a clock) so the list is topological.
std::vector<Slot> gpipeSlots(std::int64_t m, std::int64_t n, bool training, std::int64_t stop) {
  std::vector<Slot> slots;
  auto clocks = clockCycles(m, n);
  for (const auto& cells : clocks) {
    for (const Cell& cell : cells) {
      slots.push_back({OpKind::Forward, cell.i, cell.j, false});
      if (training && cell.j == n - 1) slots.push_back({OpKind::Loss, cell.i, cell.j, false});
    }
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

/// 1F1B, interleaved and zero bubble: every device's steps, device after device (the
/// topological sort interleaves them), with a loss after each forward of the last stage and a
/// recompute before each backward (B or I) of a checkpointed micro-batch. Forward only: the
/// forwards in the same order.
std::vector<Slot> orderedSlots(const ScheduleSpec& spec, std::int64_t n, std::int64_t stop) {
  std::vector<Slot> slots;
  const auto devices = spec.order
                           ? spec.order->deviceSteps()
                           : deviceSteps(spec.schedule, n, spec.chunks, spec.stagesPerDevice, spec.deferredWeights);
  for (const auto& steps : devices) {
    for (const OrderStep& step : steps) {
      if (step.kind == OpKind::Forward) {
        slots.push_back({OpKind::Forward, step.i, step.j, false});
        if (spec.training && step.j == n - 1) slots.push_back({OpKind::Loss, step.i, step.j, false});
      } else if (spec.training) {
        if (step.kind != OpKind::BackwardWeight && step.i < stop) {
          slots.push_back({OpKind::Recompute, step.i, step.j, false});
        }
        slots.push_back({step.kind, step.i, step.j, false});
      }
    }
  }
  return slots;
}

std::vector<Slot> computeSlots(const ScheduleSpec& spec, std::int64_t stop) {
  auto n = static_cast<std::int64_t>(spec.balance.size());
  switch (spec.schedule) {
    case ScheduleKind::GPipe: return gpipeSlots(spec.chunks, n, spec.training, stop);
    case ScheduleKind::OneFOneB:
    case ScheduleKind::Interleaved:
    case ScheduleKind::ZeroBubble:
    case ScheduleKind::InterleavedZeroBubble:
    case ScheduleKind::ZeroBubbleV:
    case ScheduleKind::Custom: return orderedSlots(spec, n, stop);
  }
  throw std::logic_error("unknown schedule kind");
}

/// Device d's steps under 1F1B: w = min(p - d - 1, m) warm-up forwards, then forward w + k and
/// backward k in turn, then the remaining backwards.
std::vector<OrderStep> oneFOneBSteps(std::int64_t d, std::int64_t p, std::int64_t m) {
  const std::int64_t warmup = std::min(p - d - 1, m);
  std::vector<OrderStep> steps;
  for (std::int64_t i = 0; i < warmup; ++i) steps.push_back({OpKind::Forward, i, d});
  for (std::int64_t k = 0; k < m - warmup; ++k) {
    steps.push_back({OpKind::Forward, k + warmup, d});
    steps.push_back({OpKind::Backward, k, d});
  }
  for (std::int64_t k = m - warmup; k < m; ++k) steps.push_back({OpKind::Backward, k, d});
  return steps;
}

/// Device d's steps under interleaved 1F1B (Megatron-LM's order; m a multiple of p): its k-th
/// forward runs micro-batch (k / (p v)) p + k mod p on virtual stage (k mod p v) / p, its k-th
/// backward the same micro-batch on virtual stage v - 1 - (k mod p v) / p.
std::vector<OrderStep> interleavedSteps(std::int64_t d, std::int64_t p, std::int64_t m, std::int64_t v) {
  const std::int64_t total = m * v;
  const std::int64_t warmup = std::min(2 * (p - d - 1) + (v - 1) * p, total);
  auto step = [&](std::int64_t k, bool backward) {
    const std::int64_t group = k / (p * v);
    const std::int64_t inGroup = k % (p * v);
    const std::int64_t chunk = backward ? v - 1 - inGroup / p : inGroup / p;
    return OrderStep{backward ? OpKind::Backward : OpKind::Forward, group * p + inGroup % p, chunk * p + d};
  };
  std::vector<OrderStep> steps;
  for (std::int64_t k = 0; k < warmup; ++k) steps.push_back(step(k, false));
  for (std::int64_t k = 0; k < total - warmup; ++k) {
    steps.push_back(step(k + warmup, false));
    steps.push_back(step(k, true));
  }
  for (std::int64_t k = total - warmup; k < total; ++k) steps.push_back(step(k, true));
  return steps;
}

/// Device d's steps under zero bubble (torch's ScheduleInterleavedZeroBubble; v = 1 is zb1p):
/// interleaved 1F1B's shape over rounds of r micro-batches, I in B's place, and the W of the
/// k-th backward right after the (k + deferred)-th I (torch: deferred = d), the rest at the end.
std::vector<OrderStep> zeroBubbleSteps(std::int64_t d, std::int64_t p, std::int64_t m, std::int64_t v,
                                       std::int64_t deferred) {
  const std::int64_t round = m / std::max<std::int64_t>(1, m / p);
  const std::int64_t total = m * v;
  const std::int64_t warmup = std::min((v - 1) * round + p - d - 1, total);
  std::vector<std::int64_t> forwards(static_cast<std::size_t>(v), 0);
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(v), 0);
  std::vector<std::int64_t> weights(static_cast<std::size_t>(v), 0);
  std::vector<std::int64_t> owed;  // virtual stages of the I's whose W has not run, oldest first
  std::size_t nextWeight = 0;
  std::vector<OrderStep> steps;
  auto push = [&](OpKind kind, std::int64_t chunk, std::vector<std::int64_t>& counts) {
    steps.push_back({kind, counts[static_cast<std::size_t>(chunk)]++, chunk * p + d});
  };
  auto forward = [&](std::int64_t k) { push(OpKind::Forward, (k / round) % v, forwards); };
  auto weight = [&] { push(OpKind::BackwardWeight, owed[nextWeight++], weights); };
  auto input = [&](std::int64_t k) {
    const std::int64_t chunk = v - 1 - ((k - warmup) / round) % v;
    push(OpKind::BackwardInput, chunk, inputs);
    owed.push_back(chunk);
    if (k - warmup >= deferred) weight();
  };
  for (std::int64_t k = 0; k < warmup; ++k) forward(k);
  for (std::int64_t k = warmup; k < total; ++k) {
    forward(k);
    input(k);
  }
  for (std::int64_t k = total; k < total + warmup; ++k) input(k);
  while (nextWeight < owed.size()) weight();
  return steps;
}

/// Device d's steps under zbv (torch's ScheduleZBVZeroBubble; stages d and 2p - 1 - d): over
/// M = max(m, 2p - 1) micro-batches, 2(p - d) - 1 forwards of its first stage, d pairs of
/// forwards (second stage, first stage), p - d rounds of a forward, I and W of its second
/// stage; then, while forwards remain, a forward of the first stage (while it has any left), its
/// I and W, and the forward, I and W of the second; then d pairs of I's (first, second stage)
/// and p - d of the first stage's I then W, and the W's still owed, the second stage's first.
/// The steps of micro-batches past m are dropped (torch leaves their slots idle).
std::vector<OrderStep> zeroBubbleVSteps(std::int64_t d, std::int64_t p, std::int64_t m) {
  const std::int64_t total = std::max(m, 2 * p - 1);
  const std::int64_t first = d;
  const std::int64_t second = 2 * p - 1 - d;
  std::int64_t forwards[2] = {0, 0};
  std::int64_t inputs[2] = {0, 0};
  std::int64_t weights[2] = {0, 0};
  std::vector<OrderStep> steps;
  auto push = [&](OpKind kind, int chunk, std::int64_t* counts) {
    const std::int64_t i = counts[chunk]++;
    if (i < m) steps.push_back({kind, i, chunk == 0 ? first : second});
  };
  auto forward = [&](int chunk) { push(OpKind::Forward, chunk, forwards); };
  auto input = [&](int chunk) { push(OpKind::BackwardInput, chunk, inputs); };
  auto weight = [&](int chunk) { push(OpKind::BackwardWeight, chunk, weights); };
  for (std::int64_t k = 0; k < 2 * (p - d) - 1; ++k) forward(0);
  for (std::int64_t k = 0; k < d; ++k) {
    forward(1);
    forward(0);
  }
  for (std::int64_t k = 0; k < p - d; ++k) {
    forward(1);
    input(1);
    weight(1);
  }
  while (forwards[1] < forwards[0] || forwards[0] < total) {
    if (forwards[0] < total) forward(0);
    input(0);
    weight(0);
    forward(1);
    input(1);
    weight(1);
  }
  for (std::int64_t k = 0; k < d; ++k) {
    input(0);
    input(1);
  }
  for (std::int64_t k = 0; k < p - d; ++k) {
    input(0);
    weight(0);
  }
  while (weights[1] < inputs[1]) weight(1);
  while (weights[0] < inputs[0]) weight(0);
  return steps;
}

void validate(const ScheduleSpec& spec) {
  const std::string shape = spec.shapeError();
  if (!shape.empty()) throw std::invalid_argument(shape);
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
      throw std::invalid_argument(route + ": pop layer " + std::to_string(skip.popLayer) + " is outside the model " +
                                  range);
    }
    if (skip.stashLayer >= skip.popLayer) {
      throw std::invalid_argument(route + ": stash layer " + std::to_string(skip.stashLayer) +
                                  " must come before pop layer " + std::to_string(skip.popLayer));
    }
  }
}

/// Ops that wait for each other in a cycle, each waiting (directly) for the next and the last
/// for the first: found among the ops Kahn's algorithm left (pending > 0), every one of which
/// waits for another of them, by following such waits until one repeats.
std::vector<OpIndex> findCycle(const std::vector<Op>& ops, const std::vector<std::size_t>& pending) {
  OpIndex at = 0;
  while (pending[at] == 0) ++at;
  std::map<OpIndex, std::size_t> positions;
  std::vector<OpIndex> path;
  while (positions.emplace(at, path.size()).second) {
    path.push_back(at);
    for (OpIndex dep : ops[at].deps) {
      if (pending[dep] > 0) {
        at = dep;
        break;
      }
    }
  }
  return {path.begin() + static_cast<std::ptrdiff_t>(positions.at(at)), path.end()};
}

/// Reorders ops so every op follows its dependencies, keeping the given order where it
/// already does (Kahn's algorithm, smallest index first). Dependencies are renumbered. Ops that
/// wait for each other in a cycle (a custom order that cannot run) throw what describeCycle
/// makes of them.
template <typename DescribeCycle>
std::vector<Op> topologicalSort(std::vector<Op> ops, DescribeCycle describeCycle) {
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
  if (order.size() != ops.size()) throw std::invalid_argument(describeCycle(ops, findCycle(ops, pending)));
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

std::vector<std::vector<OrderStep>> deviceSteps(ScheduleKind kind, std::int64_t n, std::int64_t m, std::int64_t v,
                                                const std::vector<std::int64_t>& deferredWeights) {
  if (n <= 0 || m <= 0) {
    throw std::invalid_argument("device steps need positive stages and chunks (stages: " + std::to_string(n) +
                                ", chunks: " + std::to_string(m) + ")");
  }
  std::string shape = scheduleShapeError(kind, v, n, m);
  if (!shape.empty()) throw std::invalid_argument(shape);
  const std::int64_t p = n / v;
  const std::string deferred = deferredWeightsError(kind, p, deferredWeights);
  if (!deferred.empty()) throw std::invalid_argument(deferred);
  std::vector<std::vector<OrderStep>> devices;
  for (std::int64_t d = 0; d < p; ++d) {
    std::vector<OrderStep> steps;
    switch (kind) {
      case ScheduleKind::GPipe:
        for (std::int64_t i = 0; i < m; ++i) steps.push_back({OpKind::Forward, i, d});
        for (std::int64_t i = m - 1; i >= 0; --i) steps.push_back({OpKind::Backward, i, d});
        break;
      case ScheduleKind::OneFOneB: steps = oneFOneBSteps(d, p, m); break;
      case ScheduleKind::Interleaved: steps = interleavedSteps(d, p, m, v); break;
      case ScheduleKind::ZeroBubble:
        steps = zeroBubbleSteps(d, p, m, v, deferredWeights.empty() ? d : deferredWeights[static_cast<std::size_t>(d)]);
        break;
      case ScheduleKind::InterleavedZeroBubble: steps = zeroBubbleSteps(d, p, m, v, d); break;
      case ScheduleKind::ZeroBubbleV: steps = zeroBubbleVSteps(d, p, m); break;
      case ScheduleKind::Custom: throw std::invalid_argument("a custom order's steps are its own (CustomOrder)");
    }
    devices.push_back(std::move(steps));
  }
  return devices;
}

std::string opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return "forward";
    case OpKind::Recompute: return "recompute";
    case OpKind::Backward: return "backward";
    case OpKind::Copy: return "copy";
    case OpKind::SkipCopy: return "skip-copy";
    case OpKind::Loss: return "loss";
    case OpKind::BackwardInput: return "backward-input";
    case OpKind::BackwardWeight: return "backward-weight";
  }
  return "unknown";
}

namespace {

/// The stages a skip route's stash and pop are in.
struct SkipSpan {
  std::int64_t stashJ;
  std::int64_t popJ;
};

/// Step 2's lookup tables for the dependency rules: each compute op by (kind, i, j), and the
/// copies into each forward and backward.
struct EmittedOps {
  using Key = std::tuple<std::int64_t, std::int64_t>;  // (i, destination j)
  std::map<std::tuple<OpKind, std::int64_t, std::int64_t>, OpIndex> compute;
  std::map<Key, std::vector<OpIndex>> forwardInputs;   // copies into forward(i, j)
  std::map<Key, std::vector<OpIndex>> backwardInputs;  // grad copies into backward(i, j)
};

/// Step 2: ops in emission order: each slot's compute op, after its device's previous one,
/// then the copies of what it sends (its output or input gradient, and the skips it stashes or
/// pops for another stage).
EmittedOps emitOps(const Schedule& schedule, const std::vector<Slot>& slots, const std::vector<SkipSpan>& spans,
                   std::vector<Op>& ops) {
  const std::int64_t m = schedule.spec().chunks;
  const std::int64_t n = schedule.stages();
  EmittedOps emitted;
  std::vector<std::vector<OpIndex>> order(static_cast<std::size_t>(schedule.devices()));  // per device
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
    (gradient ? emitted.backwardInputs : emitted.forwardInputs)[{i, to}].push_back(ops.size() - 1);
  };
  for (const Slot& slot : slots) {
    Op op;
    op.kind = slot.kind;
    op.i = slot.i;
    op.j = slot.j;
    op.toJ = slot.j;
    const auto d = static_cast<std::size_t>(schedule.deviceOf(slot.j));
    if (!order[d].empty()) op.deps.push_back(order[d].back());
    if (slot.waitsForForwardPass) op.deps.push_back(emitted.compute.at({OpKind::Loss, m - 1, n - 1}));
    ops.push_back(op);
    OpIndex index = ops.size() - 1;
    emitted.compute[{slot.kind, slot.i, slot.j}] = index;
    order[d].push_back(index);
    if (slot.kind == OpKind::Forward) {
      if (slot.j + 1 < n) addCopy(slot.i, slot.j, slot.j + 1, false, -1, index);
      for (std::size_t s = 0; s < spans.size(); ++s) {
        if (spans[s].stashJ == slot.j && spans[s].popJ != slot.j) {
          addCopy(slot.i, slot.j, spans[s].popJ, false, static_cast<std::int64_t>(s), index);
        }
      }
    } else if (slot.kind == OpKind::Backward || slot.kind == OpKind::BackwardInput) {
      if (slot.j > 0) addCopy(slot.i, slot.j, slot.j - 1, true, -1, index);
      for (std::size_t s = 0; s < spans.size(); ++s) {
        if (spans[s].popJ == slot.j && spans[s].stashJ != slot.j) {
          addCopy(slot.i, slot.j, spans[s].stashJ, true, static_cast<std::int64_t>(s), index);
        }
      }
    }
  }
  return emitted;
}

/// Step 3: data dependencies of compute ops (device order was added in step 2).
void addDataDependencies(const EmittedOps& emitted, std::vector<Op>& ops) {
  const auto& compute = emitted.compute;
  for (Op& op : ops) {
    if (op.kind == OpKind::Loss) {
      op.deps.push_back(compute.at({OpKind::Forward, op.i, op.j}));
    } else if (op.kind == OpKind::Forward) {
      auto inputs = emitted.forwardInputs.find({op.i, op.j});
      if (inputs != emitted.forwardInputs.end()) {
        op.deps.insert(op.deps.end(), inputs->second.begin(), inputs->second.end());
      }
    } else if (op.kind == OpKind::BackwardWeight) {
      op.deps.push_back(compute.at({OpKind::BackwardInput, op.i, op.j}));
    } else if (op.makesInputGradients()) {
      auto recompute = compute.find({OpKind::Recompute, op.i, op.j});
      if (recompute != compute.end()) op.deps.push_back(recompute->second);
      auto loss = compute.find({OpKind::Loss, op.i, op.j});
      if (loss != compute.end()) op.deps.push_back(loss->second);
      auto inputs = emitted.backwardInputs.find({op.i, op.j});
      if (inputs != emitted.backwardInputs.end()) {
        op.deps.insert(op.deps.end(), inputs->second.begin(), inputs->second.end());
      }
    }
    std::sort(op.deps.begin(), op.deps.end());
    op.deps.erase(std::unique(op.deps.begin(), op.deps.end()), op.deps.end());
  }
}

}  // namespace

Schedule Schedule::build(const ScheduleSpec& spec) {
  validate(spec);
  Schedule schedule;
  schedule.spec_ = spec;
  std::int64_t first = 0;
  for (std::int64_t layers : spec.balance) {
    schedule.firstLayer_.push_back(first);
    first += layers;
  }
  const std::int64_t n = schedule.stages();
  const std::int64_t stop = checkpointStop(spec.checkpoint, spec.chunks, spec.training);
  std::vector<SkipSpan> spans;
  for (const SkipRoute& skip : spec.skips) {
    spans.push_back({schedule.stageOfLayer(skip.stashLayer), schedule.stageOfLayer(skip.popLayer)});
  }

  std::vector<Op>& ops = schedule.ops_;
  const EmittedOps emitted = emitOps(schedule, computeSlots(spec, stop), spans, ops);
  addDataDependencies(emitted, ops);

  // Each device's ops keep their emission order: the device-order dependencies chain them.
  ops = topologicalSort(std::move(ops), [&](const std::vector<Op>& all, const std::vector<OpIndex>& cycle) {
    return schedule.describeCycle(all, cycle);
  });
  const std::int64_t p = schedule.devices();
  schedule.deviceOrder_.assign(static_cast<std::size_t>(p), {});
  schedule.stageOrder_.assign(static_cast<std::size_t>(n), {});
  for (OpIndex index = 0; index < ops.size(); ++index) {
    if (!ops[index].isCompute()) continue;
    schedule.deviceOrder_[static_cast<std::size_t>(schedule.deviceOf(ops[index].j))].push_back(index);
    schedule.stageOrder_[static_cast<std::size_t>(ops[index].j)].push_back(index);
  }
  return schedule;
}

std::string Schedule::actionName(const Op& op) const {
  const bool action = op.kind == OpKind::Forward || isBackwardPass(op.kind);  // what torch's CSV names
  return action ? actionText({op.j, op.kind, op.i}) : label(op);
}

std::string Schedule::describeCycle(const std::vector<Op>& ops, const std::vector<OpIndex>& cycle) const {
  // Copies only relay: name each compute op's wait for the compute op behind the copy.
  std::vector<OpIndex> computes;
  for (OpIndex index : cycle) {
    if (ops[index].isCompute()) computes.push_back(index);
  }
  const std::size_t count = computes.size();
  // Edge k: computes[k] waits for computes[k + 1] -- by its rank's order (the op before it on
  // the same rank) or for data (directly or through a copy).
  const auto byOrder = [&](std::size_t k) {
    const Op& waiting = ops[computes[k % count]];
    const OpIndex next = computes[(k + 1) % count];
    return deviceOf(waiting.j) == deviceOf(ops[next].j) &&
           std::find(waiting.deps.begin(), waiting.deps.end(), next) != waiting.deps.end();
  };
  // Start after a data wait, so each run of order waits on one rank reads as one: "rank 1 runs
  // 1B0 after 1F1" for 1B0 <- loss(0) <- 1F0 <- 1B1 <- loss(1) <- 1F1.
  std::size_t start = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if (!byOrder(k)) {
      start = k + 1;
      break;
    }
  }
  std::string text = "the order cannot run: its ranks wait for each other in a cycle:";
  for (std::size_t k = start; k < start + count; ++k) {
    const Op& waiting = ops[computes[k % count]];
    text += k == start ? " " : ", ";
    if (byOrder(k)) {
      std::size_t last = k;
      while (last + 1 < start + count && byOrder(last + 1)) ++last;
      text += "rank " + std::to_string(deviceOf(waiting.j)) + " runs " + actionName(waiting) + " after " +
              actionName(ops[computes[(last + 1) % count]]);
      k = last;
      continue;
    }
    const Op& waitedFor = ops[computes[(k + 1) % count]];
    const char* what = waitedFor.kind == OpKind::Forward ? "output" : "gradient";
    text += "rank " + std::to_string(deviceOf(waiting.j)) + "'s " + actionName(waiting) + " waits for the " + what +
            " of " + actionName(waitedFor) + " on rank " + std::to_string(deviceOf(waitedFor.j));
  }
  return text;
}

std::int64_t Schedule::layers() const {
  return std::accumulate(spec_.balance.begin(), spec_.balance.end(), std::int64_t{0});
}

std::int64_t Schedule::firstLayer(std::int64_t j) const {
  if (j < 0 || j >= stages()) {
    throw std::out_of_range("stage " + std::to_string(j) + " is outside 0.." + std::to_string(stages() - 1));
  }
  return firstLayer_[static_cast<std::size_t>(j)];
}

std::int64_t Schedule::stageOfLayer(std::int64_t layer) const {
  if (layer < 0 || layer >= layers()) {
    throw std::out_of_range("layer " + std::to_string(layer) + " is outside 0.." + std::to_string(layers() - 1));
  }
  auto next = std::upper_bound(firstLayer_.begin(), firstLayer_.end(), layer);
  return static_cast<std::int64_t>(next - firstLayer_.begin()) - 1;
}

bool Schedule::checkpointed(std::int64_t i) const {
  return i >= 0 && i < checkpointStop(spec_.checkpoint, spec_.chunks, spec_.training);
}

std::vector<bool> Schedule::firstOfKindOnStage() const {
  std::vector<bool> first(ops_.size(), false);
  for (const std::vector<OpIndex>& order : stageOrder_) {
    std::vector<OpKind> seen;
    for (OpIndex index : order) {
      const OpKind kind = ops_[index].kind;
      if (kind == OpKind::Loss || ops_[index].isCopy()) continue;
      if (std::find(seen.begin(), seen.end(), kind) != seen.end()) continue;
      seen.push_back(kind);
      first[index] = true;
    }
  }
  return first;
}

std::optional<OpIndex> Schedule::find(OpKind kind, std::int64_t i, std::int64_t j) const {
  if (j < 0 || j >= stages()) return std::nullopt;
  for (OpIndex index : stageOrder_[static_cast<std::size_t>(j)]) {
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
    case OpKind::BackwardInput:
    case OpKind::BackwardWeight: return opKindName(op.kind) + "(" + i + "," + std::to_string(op.j) + ")";
    case OpKind::Loss: return "loss(" + i + ")";
    case OpKind::Copy: return std::string(op.gradient ? "grad-copy(" : "copy(") + i + "," + route + ")";
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
