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
#include <vector>

namespace pipeprof::layer_profiling {

/// How many passes measureTimes runs at one size.
struct TimedRuns {
  double seconds = 0.0;  ///< what the passes may take (ProfileBudget::timedRunsSeconds)
  std::int64_t warmupRuns = 2;
  std::int64_t minRuns = 1;  ///< at least twice this many timed passes (half of them split), whatever the time
  StopToken stop;            ///< once requested, no pass past those
};

/// Median forward and backward time of every layer at one size (the input's rows), the backward
/// whole and split into I and W, into `costs`, over `samples` (those the memory passes took,
/// which count towards `runs.minRuns`) and the timed passes run here: a first warm-up pass, the
/// others that leave room for the timed passes `runs.minRuns` still asks for, then timed passes,
/// at least those, more while the next is expected to end within `runs.seconds`, at most a cap.
/// Where the samples already meet `runs.minRuns`, a warm-up runs only if a timed pass fits after
/// it. On CUDA also the host's time up to each run's return (forwardLaunch / backwardLaunch's
/// hostNs). With `loss`, its times too, after the last layer's forward in every pass. Returns
/// the runs recorded: the samples' and the timed passes'.
std::int64_t measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs,
                          const torch::Device& device, const LayerProfilerOptions& options, const TimedRuns& runs,
                          TimeSamples samples, LossTiming* loss);

/// CUDA: every layer's forward and backward kernels at one size (one pass, each captured alone
/// by the cheap CUPTI mode) into costs[L].forwardLaunch / backwardLaunch, whose host times
/// measureTimes filled. Returns false, leaving them incomplete, when CUPTI cannot record.
bool measureKernels(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                    CuptiCollector& collector, Precision precision);

}  // namespace pipeprof::layer_profiling
