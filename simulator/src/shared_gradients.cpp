// One copy of a shared parameter per device, and the exchange of the copies' gradients.
#include "shared_gradients.h"

#include <pipeprof/core/optimizer.h>

#include <algorithm>
#include <map>

namespace pipeprof::sim {

void sharedGradientCosts(const Profile& profile, const Cluster& cluster, const std::vector<std::int64_t>& firstLayer,
                         const std::vector<std::int32_t>& stageLane, const std::vector<std::int32_t>& stageDevice,
                         std::int32_t lanes, bool training, SharedGradientCosts& out) {
  const auto laneCount = static_cast<std::size_t>(lanes);
  out.duplicateBytes.assign(laneCount, 0);
  out.exchanges.assign(laneCount, 0);
  out.exchangeNs = 0;
  if (profile.sharedParameters.empty()) return;
  const auto laneOf = [&](std::int64_t layer) {
    const auto stage = std::upper_bound(firstLayer.begin(), firstLayer.end(), layer) - firstLayer.begin() - 1;
    return static_cast<std::size_t>(stageLane[static_cast<std::size_t>(stage)]);
  };
  // A copy: the parameter, its gradient and the optimizer's state for it.
  const Bytes copiesPerByte = 2 + optimizerStateCopies(profile.environment.optimizer.kind);
  std::map<std::pair<std::size_t, std::size_t>, Bytes> pairBytes;  // (lane a < lane b) -> bytes both hold
  for (const SharedParameterProfile& parameter : profile.sharedParameters) {
    std::map<std::size_t, std::int64_t> holders;  // lane -> layers holding it there
    for (std::int64_t layer : parameter.layers) ++holders[laneOf(layer)];
    for (const auto& [lane, count] : holders) out.duplicateBytes[lane] += (count - 1) * parameter.bytes * copiesPerByte;
    if (!training || holders.size() < 2) continue;
    for (auto a = holders.begin(); a != holders.end(); ++a) {
      out.exchanges[a->first] = 1;
      for (auto b = std::next(a); b != holders.end(); ++b) pairBytes[{a->first, b->first}] += parameter.bytes;
    }
  }
  for (const auto& [pair, bytes] : pairBytes) {
    const Link& link = cluster.link(stageDevice[pair.first], stageDevice[pair.second]);
    out.exchangeNs = std::max(out.exchangeNs, link.transferNs(bytes));
  }
}

}  // namespace pipeprof::sim
