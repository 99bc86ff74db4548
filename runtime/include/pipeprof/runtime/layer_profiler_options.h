// What the layer profiler measures: the device, the micro-batch sizes, its runs and the training step.
#pragma once

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// How the layer profiler measures (profileModel).
struct LayerProfilerOptions {
  torch::Device device = torch::kCPU;
  std::vector<std::int64_t> microBatches{1, 2, 4, 8};  ///< sizes to sample
  std::int64_t warmupRuns = 2;
  std::int64_t minRuns = 5;         ///< at least this many timed runs per layer and size
  double timeBudgetSeconds = 10.0;  ///< total budget; runs stop early when it is spent
  /// The training step measured: forwards under autocast to this precision (fp16: CUDA only),
  /// and this optimizer stepping each layer's parameters.
  Precision precision = Precision::Fp32;
  OptimizerSpec optimizer;
};

}  // namespace pipeprof
