// A custom order's checks (stages on one rank each, the same count per rank, every
// micro-batch once, forward before backward and I before W on each rank; a micro-batch's
// backward is one B, or an I and a W, each stage and micro-batch its own choice).
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

[[noreturn]] void fail(const std::string& problem) { throw std::invalid_argument(problem); }

/// Places each stage on the one rank holding its actions and reads the order's micro-batches
/// and whether any backward is split: order.stageRank, microBatches, splitsBackward.
void placeStages(const RankActions& ranks, CustomOrder& order) {
  std::map<std::int64_t, std::pair<std::size_t, ScheduleAction>> firstOfStage;  // its rank, its first action
  bool split = false;                                                           // an I or a W
  std::int64_t lastMicroBatch = -1;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].empty()) fail("rank " + std::to_string(r) + " has no action; every rank runs at least one stage");
    for (const ScheduleAction& action : ranks[r]) {
      const auto [first, added] = firstOfStage.emplace(action.stage, std::make_pair(r, action));
      if (!added && first->second.first != r) {
        fail("stage " + std::to_string(action.stage) + " has actions on rank " + std::to_string(first->second.first) +
             " (" + actionText(first->second.second) + ") and rank " + std::to_string(r) + " (" + actionText(action) +
             "); a stage runs on one rank");
      }
      lastMicroBatch = std::max(lastMicroBatch, action.microBatch);
      split = split || action.kind == OpKind::BackwardInput || action.kind == OpKind::BackwardWeight;
    }
  }
  const auto n = static_cast<std::int64_t>(firstOfStage.size());
  for (std::int64_t j = 0; j < n; ++j) {
    if (firstOfStage.count(j) == 0) {
      fail("stage " + std::to_string(j) + " has no action, though stage " +
           std::to_string(firstOfStage.rbegin()->first) + " does; stages are numbered 0..n-1");
    }
  }
  for (const auto& [stage, first] : firstOfStage) order.stageRank.push_back(static_cast<std::int64_t>(first.first));
  order.microBatches = lastMicroBatch + 1;
  order.splitsBackward = split;
}

/// The kind of every action by (pass, stage, micro-batch), checking that each comes once and
/// after what it needs on its rank (a micro-batch's forward before its B or I, its I before its
/// W). A B and an I of one micro-batch are the same pass: one of them appears.
using Passes = std::map<std::tuple<int, std::int64_t, std::int64_t>, OpKind>;
Passes checkEachRanksOrder(const RankActions& ranks) {
  Passes seen;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (std::size_t k = 0; k < ranks[r].size(); ++k) {
      const ScheduleAction& action = ranks[r][k];
      const auto [earlier, added] =
          seen.emplace(std::tuple{passOf(action.kind), action.stage, action.microBatch}, action.kind);
      if (!added) {
        fail(at(r, action) +
             (earlier->second == action.kind
                  ? " appears twice"
                  : " comes beside its " + actionText({action.stage, earlier->second, action.microBatch}) +
                        "; a micro-batch's backward is one B, or an I then a W"));
      }
      if (action.kind == OpKind::Forward) continue;
      const bool weights = action.kind == OpKind::BackwardWeight;
      const ScheduleAction needed{action.stage, weights ? OpKind::BackwardInput : OpKind::Forward, action.microBatch};
      const auto found = seen.find({passOf(needed.kind), needed.stage, needed.microBatch});
      if (found != seen.end() && found->second == needed.kind) continue;
      const bool later =
          std::find(ranks[r].begin() + static_cast<std::ptrdiff_t>(k), ranks[r].end(), needed) != ranks[r].end();
      fail(at(r, action) + (later ? " comes before its " : " has no ") + actionText(needed) +
           " on that rank; a stage runs a micro-batch's forward, then its " +
           (action.kind == OpKind::Backward ? "B" : "I, then its W"));
    }
  }
  return seen;
}

/// Every stage runs every micro-batch in every pass (forward; B, or I and W).
void checkEveryMicroBatch(const CustomOrder& order, const Passes& seen) {
  for (std::int64_t j = 0; j < order.stages(); ++j) {
    for (std::int64_t i = 0; i < order.microBatches; ++i) {
      const auto backward = seen.find({1, j, i});
      const int passes = backward != seen.end() && backward->second == OpKind::BackwardInput ? 3 : 2;
      for (int pass = 0; pass < passes; ++pass) {
        if (seen.count({pass, j, i}) != 0) continue;
        const OpKind kind = pass == 0              ? OpKind::Forward
                            : pass == 2            ? OpKind::BackwardWeight
                            : order.splitsBackward ? OpKind::BackwardInput
                                                   : OpKind::Backward;
        fail("rank " + std::to_string(order.stageRank[static_cast<std::size_t>(j)]) + " has no " +
             actionText({j, kind, i}) + "; every stage runs each of the " + std::to_string(order.microBatches) +
             " micro-batches 0.." + std::to_string(order.microBatches - 1) + " forward and backward once");
      }
    }
  }
}

}  // namespace

std::int64_t CustomOrder::stagesPerDevice() const {
  std::vector<std::int64_t> stagesOfRank(ranks.size(), 0);
  for (const std::int64_t rank : stageRank) ++stagesOfRank[static_cast<std::size_t>(rank)];
  return stagesOfRank.empty() ? 0 : *std::max_element(stagesOfRank.begin(), stagesOfRank.end());
}

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
  if (ranks.empty()) fail("no rank has an action");
  auto order = std::make_shared<CustomOrder>();
  order->source = source;
  placeStages(ranks, *order);
  checkEveryMicroBatch(*order, checkEachRanksOrder(ranks));
  order->ranks = std::move(ranks);
  return order;
}

void runCustomOrder(PipelineShape& shape, std::shared_ptr<const CustomOrder> order) {
  shape.schedule = ScheduleKind::Custom;
  shape.stagesPerDevice = order->stagesPerDevice();
  shape.chunks = order->microBatches;
  shape.deferredWeights.clear();  // the order says when each W runs
  shape.order = std::move(order);
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
