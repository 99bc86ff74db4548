// What an op after another stage's op on its device costs beyond its slot's duration.
#include "stage_switch_costs.h"

#include <cmath>
#include <cstddef>

namespace pipeprof::sim {

void addStageSwitchCosts(const CompiledSchedule& compiled, const Profile& profile, const MicroBatching& batching,
                         ResolvedCosts& out) {
  out.afterSwitchExtraNs.clear();
  if (profile.stageSwitchScales.empty() || compiled.layout.n <= compiled.lanes) return;
  const auto perClass = static_cast<std::size_t>(compiled.layout.durationsPerClass());
  bool any = false;
  out.afterSwitchExtraNs.assign(out.durationNs.size(), 0);
  for (int sizeClass = 0; sizeClass < 2; ++sizeClass) {
    const auto found = profile.stageSwitchScales.find(sizeClass == 0 ? batching.chunkSize : batching.lastSize);
    if (found == profile.stageSwitchScales.end() || found->second == 1.0) continue;
    for (std::size_t slot = sizeClass * perClass; slot < (sizeClass + 1) * perClass; ++slot) {
      const TimeNs ns = out.durationNs[slot];
      out.afterSwitchExtraNs[slot] = static_cast<TimeNs>(std::llround(static_cast<double>(ns) * found->second)) - ns;
      any = any || out.afterSwitchExtraNs[slot] != 0;
    }
  }
  if (!any) out.afterSwitchExtraNs.clear();
}

}  // namespace pipeprof::sim
