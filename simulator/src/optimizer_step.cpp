// The optimizer step that ends a training step: each pipeline device's time, temporaries and cast copies.
#include "optimizer_step.h"

#include "cost_model.h"

#include <algorithm>

namespace pipeprof::sim {

TimeNs OptimizerStepCosts::longestNs() const {
  return durationNs.empty() ? 0 : *std::max_element(durationNs.begin(), durationNs.end());
}

void optimizerStepCosts(const Profile& profile, const Cluster& cluster, const std::vector<std::int64_t>& firstLayer,
                        const std::vector<std::int32_t>& stageLane, const std::vector<std::int32_t>& stageDevice,
                        std::int32_t lanes, bool training, OptimizerStepCosts& out) {
  const auto laneCount = static_cast<std::size_t>(lanes);
  out.durationNs.assign(laneCount, 0);
  out.transientBytes.assign(laneCount, 0);
  out.castCacheBytes.assign(laneCount, 0);
  out.slowdown.assign(laneCount, 1.0);
  if (!training) return;
  for (std::size_t j = 0; j + 1 < firstLayer.size(); ++j) {
    const auto d = static_cast<std::size_t>(stageLane[j]);
    for (std::int64_t l = firstLayer[j]; l < firstLayer[j + 1]; ++l) {
      const LayerProfile& layer = profile.layers[static_cast<std::size_t>(l)];
      out.durationNs[d] += layer.optimizerStepNs;  // the profiled device's time, scaled below
      out.transientBytes[d] = std::max(out.transientBytes[d], layer.optimizerStepBytes);
      out.castCacheBytes[d] += layer.castCacheBytes;
    }
  }
  // Stage d (d < lanes) is on lane d: its cluster device is the lane's. On CPU, the devices of
  // one host that step at once share its memory (Profile::optimizerAtOnce).
  const auto sameHost = [&](std::size_t a, std::size_t b) {
    return cluster.hosts.empty() || cluster.hosts[static_cast<std::size_t>(stageDevice[a])] ==
                                        cluster.hosts[static_cast<std::size_t>(stageDevice[b])];
  };
  const bool shareMemory = !profile.onCuda() && profile.optimizerAtOnce.measured();
  for (std::size_t d = 0; shareMemory && d < laneCount; ++d) {
    if (out.durationNs[d] == 0) continue;
    std::int64_t stepping = 0;
    for (std::size_t e = 0; e < laneCount; ++e) stepping += out.durationNs[e] > 0 && sameHost(e, d) ? 1 : 0;
    out.slowdown[d] = profile.optimizerAtOnce.factor(profile.environment.optimizer.kind, stepping);
  }
  for (std::size_t d = 0; d < laneCount; ++d) {
    const double speed = cluster.devices[static_cast<std::size_t>(stageDevice[d])].relativeSpeed;
    out.durationNs[d] = scaleTime(out.durationNs[d], speed / out.slowdown[d]);
  }
}

}  // namespace pipeprof::sim
