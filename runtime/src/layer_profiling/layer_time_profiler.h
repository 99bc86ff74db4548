// The layer profiler's timed passes: each layer's forward, backward, I and W, and on CUDA its kernels.
#pragma once

#include "layer_profiling/layer_runs.h"
#include "layer_profiling/loss_profiler.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/runtime/layer_profiler_options.h>

#include <torch/torch.h>

#include <vector>

namespace pipeprof::layer_profiling {

/// The model's loss, timed in the same passes right after the last layer's forward, on its
/// output, where the last stage runs it (loss_profiler.h, timeLoss).
struct LossTiming {
  const Model* model = nullptr;
  torch::Tensor target;  ///< the batch's, on the timing device
  LossTime median;       ///< over the recorded passes, filled by measureTimes
};

/// Median forward and backward time of every layer at one size (the input's rows), the backward
/// whole and split into I and W, into `costs`: warm-up passes, then passes until twice
/// options.minRuns are done and `budgetSeconds` is spent (or a cap). On CUDA also the host's
/// time up to each pass's return (forwardLaunch / backwardLaunch's hostNs). With `loss`, its
/// times too, after the last layer's forward in every pass.
void measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                  const LayerProfilerOptions& options, double budgetSeconds, LossTiming* loss);

/// CUDA: every layer's forward and backward kernels at one size (one pass, each captured alone
/// by the cheap CUPTI mode) into costs[L].forwardLaunch / backwardLaunch, whose host times
/// measureTimes filled. Returns false, leaving them incomplete, when CUPTI cannot record.
bool measureKernels(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                    CuptiCollector& collector, Precision precision);

}  // namespace pipeprof::layer_profiling
