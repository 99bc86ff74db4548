// The layer profiler's skip-gradient probe: what a popping layer's backward hands each skip.
#pragma once

#include "layer_profiling/layer_runs.h"
#include "layer_profiling/time_samples.h"

#include <pipeprof/core/precision.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace pipeprof::layer_profiling {

/// Which backward a probe runs: I as a stage runs it (split_backward.h: a slice gets storage of
/// its own), or a whole backward, which leaves the skip's gradient in its leaf.
enum class ProbedBackward { Input, Whole };

/// What the popping layer's backward hands a skip, per skip (stash layer, name).
struct SkipGradientFacts {
  /// The very tensor it hands its input (SkipProfile::gradientSharedWithInput for I,
  /// gradientSharedInBackward for a whole backward).
  bool sharedWithInput = false;
  /// I only: a slice of the gradient of the layer's output (SkipProfile::gradientSliceOfOutput),
  /// as the engine hands it back before I gives it storage of its own.
  bool sliceOfOutput = false;
};

/// Each popping layer runs alone on stage inputs and skips handed out as a stage hands them out
/// (a leaf, or under autocast a view of one), its backward run as `probed` says, and the
/// gradients are compared by storage. Keyed by (stash layer, skip name).
///
/// The whole backward's probe runs a popping layer as a timed pass does, which the memory
/// passes do not: with `times`, each layer it marks popsASkip gets one run of its whole
/// backward timed (its forward is the memory passes': the probe's read 0.82x a timed pass's). (Not I and W: the I probe
/// asks I for the skip's gradient after the engine has made it once, where a split timed pass leaves it to W; timed
/// there, the popping layers' I + W read 0.6x a timed pass's, measureTimes times them instead.)
std::map<ProfilerSkipTracker::LayerAndName, SkipGradientFacts> skipGradientFacts(const Layers& layers,
                                                                                 const Tensors& input,
                                                                                 Precision precision,
                                                                                 ProbedBackward probed,
                                                                                 TimeSamples* times = nullptr);

}  // namespace pipeprof::layer_profiling
