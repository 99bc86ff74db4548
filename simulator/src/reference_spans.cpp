// The spans of a traced reference run as the calibration fit reads them.
#include "reference_spans.h"

#include "cost_model.h"

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/schedule.h>

#include <cmath>
#include <cstddef>
#include <numeric>

namespace pipeprof::sim {

bool forwardWithoutGraph(const ReferenceRun& run, const TraceEvent& op) {
  return op.phase == Phase::Forward &&
         op.microBatch < checkpointStop(run.candidate.checkpoint, run.candidate.chunks, /*training=*/true);
}

TimeNs profiledSpanNs(const CostSample& cost, const TraceEvent& op, bool withoutGraph) {
  if (op.phase == Phase::Forward) return withoutGraph ? cost.forwardWithoutGraphNs() : cost.forwardNs;
  if (!cost.backwardSplit) return cost.backwardNs;
  const SplitTimes times =
      stageSplitTimes(op.partition, cost.backwardSplit->inputNs, cost.backwardSplit->weightNs, cost.backwardNs);
  if (op.name.rfind(opKindName(OpKind::BackwardInput) + "(", 0) == 0) return times.inputNs;
  if (op.name.rfind(opKindName(OpKind::BackwardWeight) + "(", 0) == 0) return times.weightNs;
  return cost.backwardNs;
}

ColdOps coldOpsOf(const Profile& profile, const Candidate& candidate) {
  ColdOps cold;
  const Schedule schedule = Schedule::build(candidate.scheduleSpec(profile.skipRoutes()));
  const std::vector<bool> firstOfKind = schedule.firstOfKindOnStage();
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    const std::vector<OpIndex>& order = schedule.deviceOrder(d);
    for (std::size_t position = 0; position < order.size(); ++position) {
      const std::string label = schedule.label(schedule.op(order[position]));
      if (candidate.stagesPerDevice >= 2 && schedule.followsAnotherStage(d, position)) cold.afterSwitch.insert(label);
      if (firstOfKind[order[position]]) cold.firstInStep.insert(label);
    }
  }
  return cold;
}

TimeNs stageProfiledNs(const Profile& profile, const ReferenceRun& run, const TraceEvent& op, std::int64_t size) {
  const std::vector<std::int64_t>& balance = run.candidate.balance;
  const auto j = static_cast<std::size_t>(op.partition);
  if (j >= balance.size()) return 0;
  const auto first =
      std::accumulate(balance.begin(), balance.begin() + static_cast<std::ptrdiff_t>(j), std::int64_t{0});
  const bool withoutGraph = forwardWithoutGraph(run, op);
  TimeNs ns = 0;
  for (std::int64_t layer = first; layer < first + balance[j]; ++layer) {
    ns += profiledSpanNs(profile.layers[static_cast<std::size_t>(layer)].costAt(size), op, withoutGraph);
  }
  return ns;
}

TimeNs asWarmOp(const TraceEvent& op, const ColdOps& cold, const ColdScales& scales) {
  double scale = 1.0;
  if (scales.afterSwitch != 1.0 && cold.afterSwitch.count(op.name) > 0) scale *= scales.afterSwitch;
  if (scales.firstInStep != 1.0 && cold.firstInStep.count(op.name) > 0) scale *= scales.firstInStep;
  if (scale == 1.0) return op.durationNs;
  return static_cast<TimeNs>(std::llround(static_cast<double>(op.durationNs) / scale));
}

}  // namespace pipeprof::sim
