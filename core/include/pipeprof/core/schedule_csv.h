// torch.distributed.pipelining's schedule format: per-rank action lists as CSV, read and written.
//
// One row per rank (row r is rank r), one cell per action in that rank's order, an empty cell
// for an idle slot of torch's lock-step grid (skipped when read, never written). An action is
// <stage><type><micro-batch>: F forward, B full backward, I backward for the inputs only, W
// backward for the weights only; "3I0" is stage 3's input-gradient backward of micro-batch 0.
// torch's own dumps (PipelineScheduleMulti._dump_csv) read as they are; what pipeprof writes
// torch reads with _load_csv. Recomputes and losses have no action: a stage's F includes its
// loss, its B or I its recompute.
#pragma once

#include <pipeprof/core/schedule.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// One action of a rank's order.
struct ScheduleAction {
  std::int64_t stage = 0;
  OpKind kind = OpKind::Forward;  ///< Forward, Backward, BackwardInput or BackwardWeight
  std::int64_t microBatch = 0;
  friend bool operator==(const ScheduleAction& a, const ScheduleAction& b) {
    return a.stage == b.stage && a.kind == b.kind && a.microBatch == b.microBatch;
  }
};

/// Every rank's actions in order (index: rank).
using RankActions = std::vector<std::vector<ScheduleAction>>;

/// "3I0".
std::string actionText(const ScheduleAction& action);
/// Parses "3I0" (surrounding spaces allowed). Throws std::invalid_argument naming the text and
/// the expected form.
ScheduleAction parseAction(const std::string& text);

/// Reads a schedule CSV's text (from `file`, named in errors). Throws FormatError naming the
/// file, the rank and column ("$.rank[1][4]") and the cell for a malformed action, or for a
/// file with no action at all.
RankActions readScheduleCsv(const std::string& text, const std::string& file);
/// One line per rank, its actions joined by commas.
std::string writeScheduleCsv(const RankActions& ranks);

/// The order a schedule's devices run, as actions: its forwards and backwards (B, I, W) by
/// device, recomputes and losses left out.
RankActions scheduleActions(const Schedule& schedule);

}  // namespace pipeprof
