// The optimizer step that ends a training step: each pipeline device's time, temporaries and cast copies.
#include "optimizer_step.h"

#include "cost_model.h"

#include <algorithm>

namespace pipeprof::sim {

TimeNs OptimizerStepCosts::longestNs() const {
  return durationNs.empty() ? 0 : *std::max_element(durationNs.begin(), durationNs.end());
}

void optimizerStepCosts(const Profile& profile, const Cluster& cluster, const std::vector<std::int64_t>& firstLayer,
                        const std::vector<std::int32_t>& partitionLane,
                        const std::vector<std::int32_t>& partitionDevice, std::int32_t lanes, OptimizerStepCosts& out) {
  const auto laneCount = static_cast<std::size_t>(lanes);
  std::vector<TimeNs> profileNs(laneCount, 0);
  out.durationNs.assign(laneCount, 0);
  out.transientBytes.assign(laneCount, 0);
  out.castCacheBytes.assign(laneCount, 0);
  std::vector<double> speed(laneCount, 1.0);
  for (std::size_t j = 0; j + 1 < firstLayer.size(); ++j) {
    const auto d = static_cast<std::size_t>(partitionLane[j]);
    speed[d] = cluster.devices[static_cast<std::size_t>(partitionDevice[j])].relativeSpeed;
    for (std::int64_t l = firstLayer[j]; l < firstLayer[j + 1]; ++l) {
      const LayerProfile& layer = profile.layers[static_cast<std::size_t>(l)];
      profileNs[d] += layer.optimizerStepNs;
      out.transientBytes[d] = std::max(out.transientBytes[d], layer.optimizerStepBytes);
      out.castCacheBytes[d] += layer.castCacheBytes;
    }
  }
  for (std::size_t d = 0; d < laneCount; ++d) out.durationNs[d] = scaleTime(profileNs[d], speed[d]);
}

}  // namespace pipeprof::sim
