// What a compute op costs beyond its slot's duration where it finds the caches cold.
#include "cold_cache_costs.h"

#include <cmath>
#include <cstddef>
#include <map>
#include <vector>

namespace pipeprof::sim {
namespace {

/// Per duration slot, (scale at its size class's micro-batch - 1) x its duration; empty when
/// that charges nothing.
std::vector<TimeNs> extraNs(const CompiledSchedule& compiled, const std::map<std::int64_t, double>& scales,
                            const MicroBatching& batching, const std::vector<TimeNs>& durationNs) {
  std::vector<TimeNs> extras;
  if (scales.empty()) return extras;
  const auto perClass = static_cast<std::size_t>(compiled.layout.durationsPerClass());
  bool any = false;
  extras.assign(durationNs.size(), 0);
  for (int sizeClass = 0; sizeClass < 2; ++sizeClass) {
    const auto found = scales.find(sizeClass == 0 ? batching.chunkSize : batching.lastSize);
    if (found == scales.end() || found->second == 1.0) continue;
    for (std::size_t slot = sizeClass * perClass; slot < (sizeClass + 1) * perClass; ++slot) {
      const TimeNs ns = durationNs[slot];
      extras[slot] = static_cast<TimeNs>(std::llround(static_cast<double>(ns) * found->second)) - ns;
      any = any || extras[slot] != 0;
    }
  }
  if (!any) extras.clear();
  return extras;
}

}  // namespace

void addColdCacheCosts(const CompiledSchedule& compiled, const Profile& profile, const MicroBatching& batching,
                       ResolvedCosts& out) {
  out.afterSwitchExtraNs.clear();
  if (compiled.layout.n > compiled.lanes)
    out.afterSwitchExtraNs = extraNs(compiled, profile.stageSwitchScales, batching, out.durationNs);
  out.firstInStepExtraNs = extraNs(compiled, profile.firstInStepScales, batching, out.durationNs);
}

}  // namespace pipeprof::sim
