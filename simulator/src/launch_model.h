// The launch model in closed form: when a compute op's kernels run, given its host's launches and its stream.
#pragma once

#include <pipeprof/core/units.h>

#include <cstdint>

namespace pipeprof::sim {

/// When one compute op's launches and kernels happen (docs/simulator.md, "Launches").
struct LaunchTimes {
  TimeNs launchedNs = 0;     ///< the host has launched the op's last kernel: its thread is free again
  TimeNs firstKernelNs = 0;  ///< the op's first kernel starts on its stream
  TimeNs endNs = 0;          ///< the op's last kernel ends: its stream is free, its dependants may start
};

/// A host thread starts launching an op at startNs; the op's stream is free from streamFreeNs.
/// The thread launches `kernels` kernels of deviceNs / kernels each, one per hostNs / kernels,
/// and each kernel starts at the later of the end of its launch and the end of the previous
/// kernel on the stream. In closed form, with l = hostNs, d = deviceNs, k = kernels, s =
/// streamFreeNs, t = startNs:
///
///     launchedNs    = t + l
///     firstKernelNs = max(s, t + ceil(l / k))
///     endNs         = max(s + d, t + max(l, d) + ceil(min(l, d) / k))
///
/// Launch-bound (l > d): the stream ends d / k after the last launch; device-bound (d >= l): d
/// after the first launch, or after the stream frees. An op without kernels (k = 0, so d = 0;
/// a loss) ends at max(s, t + l). deviceNs > 0 with kernels 0 counts as one kernel.
LaunchTimes launchTimes(TimeNs startNs, TimeNs hostNs, TimeNs deviceNs, std::int64_t kernels,
                        TimeNs streamFreeNs);

}  // namespace pipeprof::sim
