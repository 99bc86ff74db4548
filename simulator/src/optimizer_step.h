// The optimizer step that ends a training step: what it costs each pipeline device.
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// Per pipeline device (lane), from the profile's layers of its stages (docs/simulator.md,
/// "The optimizer step"): the executors step every device's parameters once all devices have
/// run their ops, each device on its own thread, so the step ends max_d durationNs[d] after the
/// pipeline's last op, and on CPU the devices of one host step at once. Its temporaries are
/// those of the device's largest layer (LibTorch steps parameter by parameter); autocast's cast
/// copies are held from the step's first ops until the optimizer starts.
struct OptimizerStepCosts {
  /// sum of the layers' optimizer_step_ns x slowdown / the device's speed
  std::vector<TimeNs> durationNs;
  /// CPU: what stepping at once with the other devices of its host costs (Profile::optimizerAtOnce,
  /// by how many of them step); 1 on CUDA, with one device stepping, or with a profile without it.
  std::vector<double> slowdown;
  std::vector<Bytes> transientBytes;  ///< max of the layers' optimizer_step_bytes
  std::vector<Bytes> castCacheBytes;  ///< sum of the layers' cast_cache_bytes

  /// The longest duration: what the step takes beyond the pipeline (0 with no lanes).
  TimeNs longestNs() const;
};

/// Fills `out` (reusing its storage; all zero for a step that does not train). firstLayer has
/// n + 1 entries (the last is the layer count); stageLane[j] is stage j's lane,
/// stageDevice[j] its cluster device.
void optimizerStepCosts(const Profile& profile, const Cluster& cluster, const std::vector<std::int64_t>& firstLayer,
                        const std::vector<std::int32_t>& stageLane, const std::vector<std::int32_t>& stageDevice,
                        std::int32_t lanes, bool training, OptimizerStepCosts& out);

}  // namespace pipeprof::sim
