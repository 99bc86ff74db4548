// The launch model in closed form: when a compute op's kernels run, given its host's launches and its stream.
#include "launch_model.h"

#include <algorithm>

namespace pipeprof::sim {
namespace {

TimeNs ceilDiv(TimeNs a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

LaunchTimes launchTimes(TimeNs startNs, TimeNs hostNs, TimeNs deviceNs, std::int64_t kernels,
                        TimeNs streamFreeNs) {
  LaunchTimes times;
  times.launchedNs = startNs + hostNs;
  if (kernels < 1 && deviceNs > 0) kernels = 1;
  if (kernels < 1) {
    times.endNs = std::max(streamFreeNs, times.launchedNs);
    times.firstKernelNs = times.endNs;
    return times;
  }
  // Kernel x (0-based) is launched by t + (x+1) l/k and ends by max(previous end, launch) + d/k;
  // unrolled, the last ends at max(s + d, max over x of t + ((x+1) l + (k-x) d) / k), whose
  // inner term is linear in x: largest at x = k-1 when l > d, at x = 0 when d >= l.
  times.firstKernelNs = std::max(streamFreeNs, startNs + ceilDiv(hostNs, kernels));
  times.endNs = std::max(streamFreeNs + deviceNs,
                         startNs + std::max(hostNs, deviceNs) + ceilDiv(std::min(hostNs, deviceNs), kernels));
  return times;
}

}  // namespace pipeprof::sim
