// Accelerator memory accounting for builds without CUDA: there is no accelerator to count.
#include "device_memory.h"

namespace pipeprof {

void attributeDeviceStreams(const std::vector<StreamTag>& /*owned*/) {}

void resetDevicePeakBytes(const c10::Device& /*device*/) {}

std::optional<Bytes> devicePeakBytes(const c10::Device& /*device*/) { return std::nullopt; }

}  // namespace pipeprof
