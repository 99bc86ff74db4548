// A custom order's checks (stages on one rank each, the same count per rank, one kind of
// backward, every micro-batch once, forward before backward and I before W on each rank).
#include <pipeprof/core/custom_order.h>

#include <pipeprof/core/json_file.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace pipeprof {
namespace {

/// Where an action is: its rank and its text, "rank 1's 1B0".
std::string at(std::size_t rank, const ScheduleAction& action) {
  return "rank " + std::to_string(rank) + "'s " + actionText(action);
}

/// Which pass an action is: 0 forward, 1 B or I, 2 W.
int passOf(OpKind kind) { return kind == OpKind::Forward ? 0 : kind == OpKind::BackwardWeight ? 2 : 1; }

}  // namespace

std::vector<std::vector<OrderStep>> CustomOrder::deviceSteps() const {
  std::vector<std::vector<OrderStep>> devices;
  for (const auto& actions : ranks) {
    std::vector<OrderStep> steps;
    for (const ScheduleAction& action : actions) steps.push_back({action.kind, action.microBatch, action.stage});
    devices.push_back(std::move(steps));
  }
  return devices;
}

std::shared_ptr<const CustomOrder> makeCustomOrder(RankActions ranks, const std::string& source) {
  const auto fail = [](const std::string& problem) { throw std::invalid_argument(problem); };
  if (ranks.empty()) fail("no rank has an action");
  auto order = std::make_shared<CustomOrder>();
  order->source = source;
  // Placement: every stage on one rank; the first action seen of each stage names it.
  std::map<std::int64_t, std::pair<std::size_t, ScheduleAction>> firstOfStage;
  std::int64_t lastMicroBatch = -1;
  const ScheduleAction* full = nullptr;
  const ScheduleAction* split = nullptr;
  std::size_t fullRank = 0;
  std::size_t splitRank = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].empty()) fail("rank " + std::to_string(r) + " has no action; every rank runs at least one stage");
    for (const ScheduleAction& action : ranks[r]) {
      const auto [it, added] = firstOfStage.emplace(action.stage, std::make_pair(r, action));
      if (!added && it->second.first != r) {
        fail("stage " + std::to_string(action.stage) + " has actions on rank " + std::to_string(it->second.first) +
             " (" + actionText(it->second.second) + ") and rank " + std::to_string(r) + " (" + actionText(action) +
             "); a stage runs on one rank");
      }
      lastMicroBatch = std::max(lastMicroBatch, action.microBatch);
      if (action.kind == OpKind::Backward && full == nullptr) {
        full = &action;
        fullRank = r;
      }
      if (action.kind != OpKind::Backward && action.kind != OpKind::Forward && split == nullptr) {
        split = &action;
        splitRank = r;
      }
    }
  }
  if (full != nullptr && split != nullptr) {
    fail("the order mixes full backwards (" + at(fullRank, *full) + ") with split ones (" + at(splitRank, *split) +
         "); use B throughout or I and W throughout");
  }
  const auto n = static_cast<std::int64_t>(firstOfStage.size());
  if (firstOfStage.rbegin()->first != n - 1) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (firstOfStage.count(j) == 0) {
        fail("stage " + std::to_string(j) + " has no action, though stage " +
             std::to_string(firstOfStage.rbegin()->first) + " does; stages are numbered 0..n-1");
      }
    }
  }
  order->stageRank.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> stagesOfRank(ranks.size(), 0);
  for (const auto& [stage, first] : firstOfStage) {
    order->stageRank[static_cast<std::size_t>(stage)] = static_cast<std::int64_t>(first.first);
    ++stagesOfRank[first.first];
  }
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    if (stagesOfRank[r] != stagesOfRank[0]) {
      fail("rank 0 runs " + std::to_string(stagesOfRank[0]) + " stage(s) and rank " + std::to_string(r) + " runs " +
           std::to_string(stagesOfRank[r]) + "; every rank runs the same number of stages");
    }
  }
  order->microBatches = lastMicroBatch + 1;
  order->splitsBackward = split != nullptr;

  // Each (pass, stage, micro-batch) once, and on its rank after what it needs.
  std::map<std::tuple<int, std::int64_t, std::int64_t>, std::size_t> seen;  // -> position on its rank
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (std::size_t k = 0; k < ranks[r].size(); ++k) {
      const ScheduleAction& action = ranks[r][k];
      if (!seen.emplace(std::make_tuple(passOf(action.kind), action.stage, action.microBatch), k).second) {
        fail(at(r, action) + " appears twice");
      }
      if (action.kind == OpKind::Forward) continue;
      const ScheduleAction needed{action.stage,
                                  action.kind == OpKind::BackwardWeight ? OpKind::BackwardInput : OpKind::Forward,
                                  action.microBatch};
      if (seen.count({passOf(needed.kind), needed.stage, needed.microBatch}) == 0) {
        const bool later =
            std::find(ranks[r].begin() + static_cast<std::ptrdiff_t>(k), ranks[r].end(), needed) != ranks[r].end();
        fail(at(r, action) + (later ? " comes before its " + actionText(needed) : " has no " + actionText(needed)) +
             " on that rank; a stage runs a micro-batch's forward, then its " +
             (order->splitsBackward ? "I, then its W" : "B"));
      }
    }
  }
  const int passes = order->splitsBackward ? 3 : 2;
  for (std::int64_t j = 0; j < n; ++j) {
    const auto rank = static_cast<std::size_t>(order->stageRank[static_cast<std::size_t>(j)]);
    for (std::int64_t i = 0; i < order->microBatches; ++i) {
      for (int pass = 0; pass < passes; ++pass) {
        if (seen.count({pass, j, i}) != 0) continue;
        const OpKind kind = pass == 0               ? OpKind::Forward
                            : pass == 2             ? OpKind::BackwardWeight
                            : order->splitsBackward ? OpKind::BackwardInput
                                                    : OpKind::Backward;
        fail("rank " + std::to_string(rank) + " has no " + actionText({j, kind, i}) +
             "; every stage runs each of the " + std::to_string(order->microBatches) + " micro-batches 0.." +
             std::to_string(order->microBatches - 1) + " forward and backward once");
      }
    }
  }
  order->ranks = std::move(ranks);
  return order;
}

std::shared_ptr<const CustomOrder> readCustomOrder(const std::string& path) {
  RankActions ranks = readScheduleCsv(readTextFile(path), path);
  try {
    return makeCustomOrder(std::move(ranks), path);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(path + ": " + error.what());
  }
}

}  // namespace pipeprof
