// Accelerator memory figures for builds without CUDA: there is no accelerator to report on.
#include "device_memory.h"

namespace pipeprof {

void resetDevicePeakBytes(const torch::Device& /*device*/) {}

std::optional<Bytes> devicePeakBytes(const torch::Device& /*device*/) { return std::nullopt; }

}  // namespace pipeprof
