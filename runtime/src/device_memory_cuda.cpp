// Accelerator memory figures from the CUDA caching allocator (compiled only when Torch has CUDA).
#include "device_memory.h"

#include <c10/cuda/CUDACachingAllocator.h>

namespace pipeprof {
namespace {
constexpr std::size_t kAggregate = 0;  // StatType::AGGREGATE: all pools together
}  // namespace

void resetDevicePeakBytes(const torch::Device& device) {
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
  }
}

std::optional<Bytes> devicePeakBytes(const torch::Device& device) {
  if (!device.is_cuda()) {
    return std::nullopt;
  }
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
  return static_cast<Bytes>(stats.allocated_bytes[kAggregate].peak);
}

}  // namespace pipeprof
