// Parameters several layers share (tied embeddings): one copy per device, and the sum of the
// copies' gradients that ends a training step before the optimizer.
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// Per pipeline device (lane), from Profile::sharedParameters (docs/simulator.md, "Shared
/// parameters"). Each layer holding a shared parameter counts it in its static bytes; a device
/// whose stages hold it in k layers holds one copy, so duplicateBytes[d] is (k - 1) x its bytes
/// x (parameter, gradient and optimizer state). Devices holding a copy each sum all copies'
/// gradients once every device has run its ops: the copies of a parameter cross between each
/// pair of those devices (both ways at once, over the link between them), so the step waits
/// exchangeNs, the slowest pair's transfer of the bytes it shares, before the optimizer.
struct SharedGradientCosts {
  std::vector<Bytes> duplicateBytes;
  std::vector<char> exchanges;  ///< whether the device takes part in the exchange
  TimeNs exchangeNs = 0;
};

/// Fills `out` (reusing its storage). firstLayer has n + 1 entries; stageLane[j] is stage
/// j's lane, stageDevice[d] lane d's cluster device. No exchange for a step that does not
/// train.
void sharedGradientCosts(const Profile& profile, const Cluster& cluster, const std::vector<std::int64_t>& firstLayer,
                         const std::vector<std::int32_t>& stageLane, const std::vector<std::int32_t>& stageDevice,
                         std::int32_t lanes, bool training, SharedGradientCosts& out);

}  // namespace pipeprof::sim
