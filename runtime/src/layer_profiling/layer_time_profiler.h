// The layer profiler's timed passes: each layer's forward, backward, I and W, and on CUDA its kernels.
#pragma once

#include "layer_profiling/layer_runs.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/runtime/layer_profiler_options.h>

#include <torch/torch.h>

#include <vector>

namespace pipeprof::layer_profiling {

/// Median forward and backward time of every layer at one size (the input's rows), the backward
/// whole and split into I and W, into `costs`: warm-up passes, then passes until twice
/// options.minRuns are done and `budgetSeconds` is spent (or a cap). On CUDA also the host's
/// time up to each pass's return (forwardLaunch / backwardLaunch's hostNs).
void measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                  const LayerProfilerOptions& options, double budgetSeconds);

/// CUDA: every layer's forward and backward kernels at one size (one pass, each captured alone
/// by the cheap CUPTI mode) into costs[L].forwardLaunch / backwardLaunch, whose host times
/// measureTimes filled. Returns false, leaving them incomplete, when CUPTI cannot record.
bool measureKernels(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                    CuptiCollector& collector, Precision precision);

}  // namespace pipeprof::layer_profiling
