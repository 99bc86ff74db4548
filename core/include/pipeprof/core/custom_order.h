// A schedule given as per-rank orders (torch.distributed.pipelining's action CSV) rather than
// generated: its checks, its placement, and the steps Schedule::build expands.
//
// Rank r of the file is pipeline device d = r. What the order must be, each checked with a
// message naming the rank and the action:
//   - every stage 0..n-1 has actions, all on one rank (that is its placement), and every rank
//     has actions; ranks may hold different numbers of stages (3 stages on 2 ranks, say);
//   - every stage runs each micro-batch 0..m-1 once forward and once backward (B, or I and W:
//     each stage and micro-batch its own choice, as torch allows), a rank running a
//     micro-batch's forward before its backward and its I before its W.
// That the dependencies between ranks can be met is checked when the Schedule is built: a
// cyclic wait is named rank by rank (Schedule::build).
#pragma once

#include <pipeprof/core/schedule_csv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

/// A checked custom order (makeCustomOrder): rank r's actions in order, and what follows from them.
struct CustomOrder {
  RankActions ranks;
  std::vector<std::int64_t> stageRank;  ///< per stage j: the rank (pipeline device) that runs it
  std::int64_t microBatches = 0;        ///< m: every stage runs micro-batches 0..m-1
  bool splitsBackward = false;          ///< some backward is I and W rather than B
  std::string source;                   ///< where it came from ("order.csv"), named in messages

  std::int64_t stages() const { return static_cast<std::int64_t>(stageRank.size()); }
  std::int64_t devices() const { return static_cast<std::int64_t>(ranks.size()); }
  /// v: the most stages a rank holds (ranks may hold fewer).
  std::int64_t stagesPerDevice() const;
  /// Rank r's forwards and backwards as Schedule::build expands them (deviceSteps' form).
  std::vector<std::vector<OrderStep>> deviceSteps() const;

  friend bool operator==(const CustomOrder& a, const CustomOrder& b) { return a.ranks == b.ranks; }
};

/// Checks the ranks' actions (the rules above) and returns the order, `source` naming where it
/// came from in later messages. Throws std::invalid_argument naming the rank and the action,
/// e.g. "stage 1 has actions on rank 0 (1F0) and rank 1 (1B0); a stage runs on one rank".
std::shared_ptr<const CustomOrder> makeCustomOrder(RankActions ranks, const std::string& source);

/// Makes the shape run `order`: schedule custom, the order, its v, and its micro-batches as the
/// chunks (the balance is the caller's: one entry per stage of the order).
void runCustomOrder(PipelineShape& shape, std::shared_ptr<const CustomOrder> order);

/// Reads and checks a schedule CSV file. Throws FormatError when it cannot be read or has a
/// malformed cell, std::invalid_argument ("order.csv: " and the rule broken) for an order that
/// breaks a rule.
std::shared_ptr<const CustomOrder> readCustomOrder(const std::string& path);

}  // namespace pipeprof
