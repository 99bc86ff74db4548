// zb1p within 1F1B's memory: the W's each device may defer.
#include "weight_deferral.h"

#include <algorithm>

namespace pipeprof::sim {

std::vector<std::int64_t> deferralWithinOneFOneBMemory(CostModel& costs, const Candidate& candidate) {
  const MicroBatching batching = microBatching(candidate.batch, candidate.chunks);
  const LayerCostTable& table = costs.table(batching.chunkSize);
  const bool checkpointed = checkpointStop(candidate.checkpoint, batching.count, /*training=*/true) > 0;
  const std::int64_t p = candidate.pipelineDevices();
  std::vector<std::int64_t> deferred(static_cast<std::size_t>(p), 0);
  std::size_t first = 0;
  for (std::int64_t d = 0; d < p; ++d) {
    const std::size_t end = first + static_cast<std::size_t>(candidate.balance[static_cast<std::size_t>(d)]);
    const Bytes output = table.outputBytes[end - 1];
    const Bytes forwardHeld =
        checkpointed ? (first > 0 ? table.outputBytes[first - 1] : 0) + output
                     : table.savedPrefix[end] - table.savedPrefix[first] + table.unsavedOutputBytes(end - 1);
    const Bytes weightHeld = table.weightSavedPrefix[end] - table.weightSavedPrefix[first];
    if (weightHeld <= forwardHeld) {
      deferred[static_cast<std::size_t>(d)] = d;
    } else {
      const std::int64_t fits = (d + 1) * forwardHeld / weightHeld - 1;  // (e + 1) S_W <= (d + 1) S
      deferred[static_cast<std::size_t>(d)] = std::clamp<std::int64_t>(fits, 0, d);
    }
    first = end;
  }
  bool torchs = true;  // d on every device: the shape's default, left unsaid
  for (std::int64_t d = 0; d < p; ++d) torchs = torchs && deferred[static_cast<std::size_t>(d)] == d;
  if (torchs) deferred.clear();
  return deferred;
}

}  // namespace pipeprof::sim
