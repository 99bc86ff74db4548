// What the layer profiler measures: the device, the micro-batch sizes, its runs and the training step.
#pragma once

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/stop_token.h>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// How the layer profiler measures (profileModel).
struct LayerProfilerOptions {
  torch::Device device = torch::kCPU;
  std::vector<std::int64_t> microBatches{1, 2, 4, 8};  ///< sizes to sample
  std::int64_t warmupRuns = 2;                         ///< at most; past the first only where the budget leaves room
  /// At least this many timed runs of each layer's backward whole and as many split, per size,
  /// whatever the budget; more while the budget lasts.
  std::int64_t minRuns = 1;
  /// The whole profile's: every pass is timed, and the timed runs of each size get what the
  /// others are expected to leave (docs/profiler.md, "The budget"). The passes it cannot do
  /// without run whatever it is: Profile::environment.profiling says what each took.
  double timeBudgetSeconds = 10.0;
  StopToken stop;  ///< once requested, each size's timed runs end at minRuns
  /// The training step measured: forwards under autocast to this precision (fp16: CUDA only),
  /// and this optimizer stepping each layer's parameters.
  Precision precision = Precision::Fp32;
  OptimizerSpec optimizer;
};

}  // namespace pipeprof
