// Accelerator memory figures for the Pipe: the caching allocator's per-device peak (CUDA builds).
#pragma once

#include <pipeprof/core/units.h>

#include <torch/torch.h>

#include <optional>

namespace pipeprof {

/// Starts a new peak window on an accelerator device (nothing for CPU devices or builds
/// without CUDA).
void resetDevicePeakBytes(const torch::Device& device);

/// The caching allocator's highest allocated bytes on `device` since the last reset
/// (parameters included), or nullopt for CPU devices and builds without CUDA.
std::optional<Bytes> devicePeakBytes(const torch::Device& device);

}  // namespace pipeprof
