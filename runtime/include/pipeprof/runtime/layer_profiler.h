// The layer profile builder: measures each layer's costs on a device into a pipeprof.profile/v1.
#pragma once

#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/layer_profiler_options.h>
#include <pipeprof/runtime/model.h>
#include <pipeprof/runtime/models.h>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

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
