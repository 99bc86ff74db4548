// The layer profile builder: measures each layer's costs on a device into a pipeprof.profile/v1.
#pragma once

#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/models.h>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

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

/// Measures every layer of the model at each micro-batch size: forward and backward time
/// (median of the timed runs), output bytes, bytes saved for backward and transient peak,
/// plus parameter bytes and the skip routes with their sizes. Memory is measured on
/// options.device: on CPU through the tracked CPU allocator, on CUDA through the caching
/// allocator (its blocks; parameters counted as one block each), where the library workspace
/// of one (thread, stream) pair is measured too (Profile::libraryWorkspaceBytes, 0 on CPU).
/// Under bf16/fp16 every forward runs under autocast (backwards paused), and the cast copies
/// autocast's cache keeps are measured apart from the saved bytes (castCacheBytes). The model's
/// loss is measured on the last layer's output (Profile::loss). The optimizer's state (exact:
/// optimizerStateCopies x the gradients), its step time and the step's transient are measured
/// per layer, for every optimizer kind (optimizerSteps; the options' one is the profile's). Leaves the model's
/// parameters and buffers unchanged, and on CUDA frees the library workspaces it made. Records the device, thread
/// count, LibTorch version, precision and optimizer. Throws std::invalid_argument for fp16 on a CPU and for an
/// optimizer hyperparameter out of range.
Profile profileModel(Model& model, const LayerProfilerOptions& options);

}  // namespace pipeprof
