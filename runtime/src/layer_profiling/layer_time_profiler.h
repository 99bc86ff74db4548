// The layer profiler's timed passes: each layer's forward, backward, I and W, and on CUDA its kernels.
#pragma once

#include "layer_profiling/layer_runs.h"
#include "layer_profiling/loss_profiler.h"
#include "layer_profiling/time_samples.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/runtime/layer_profiler_options.h>

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace pipeprof::layer_profiling {

/// How many passes measureTimes runs at one size.
struct TimedRuns {
  double seconds = 0.0;  ///< what the passes may take (ProfileBudget::timedRunsSeconds)
  std::int64_t warmupRuns = 2;
  std::int64_t minRuns = 1;  ///< at least twice this many timed passes (half of them split), whatever the time
  StopToken stop;            ///< once requested, no pass past those
};

/// A timed pass runs the layers as a stage does, window by window: every forward of a window in
/// order, then its backwards in reverse (docs/profiler.md, "In a stage's order"). A window holds
/// consecutive layers whose outputs and saved tensors (costs[L].outputBytes + savedBytes) add up
/// to at most kStageWindowBytes, and at least one layer: a limit far past any cache, so that a
/// backward reads what its forward left as cold as inside a stage of the same layers, and a
/// bound, so that the timed passes never hold a whole large batch's activations.
inline constexpr Bytes kStageWindowBytes = Bytes{1} << 30;

/// The windows [begin, end) of `costs`' layers, each at most `limitBytes` (at least one layer).
std::vector<std::pair<std::int64_t, std::int64_t>> stageWindows(const std::vector<CostSample>& costs,
                                                                Bytes limitBytes = kStageWindowBytes);

/// Median forward and backward time of every layer at one size (the input's rows), the backward
/// whole and split into I and W, into `costs`, over `samples` (those the memory and skip passes
/// took) and the timed passes run here. First the floor, whatever the budget: passes that time
/// the layers with fewer than `runs.minRuns` runs, whole and split (the others' forwards run
/// only to feed them), a first warm-up before them; where the samples time every layer, none.
/// Then passes of every layer while the next is expected to end within `runs.seconds` (the
/// warm-ups left first, where a timed pass fits after each), whole and split in turn, at most
/// 100 runs in all. The forward without a graph (CostSample::forwardNoGradNs) in forward-only
/// passes of its own: `runs.minRuns` after the floor (a warm-up first), then one after each
/// split pass while one fits. On CUDA also the host's time up to each run's return (forwardLaunch /
/// backwardLaunch's hostNs). With `loss`, its times too, after the last layer's forward in every
/// pass. Returns the runs recorded: the fewest of any layer, whole and split together.
std::int64_t measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs,
                          const torch::Device& device, const LayerProfilerOptions& options, const TimedRuns& runs,
                          TimeSamples samples, LossTiming* loss);

/// CUDA: every layer's forward and backward kernels at one size (one pass, each captured alone
/// by the cheap CUPTI mode) into costs[L].forwardLaunch / backwardLaunch, whose host times
/// measureTimes filled. Returns false, leaving them incomplete, when CUPTI cannot record.
bool measureKernels(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                    CuptiCollector& collector, Precision precision);

}  // namespace pipeprof::layer_profiling
