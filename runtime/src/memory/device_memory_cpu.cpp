// Accelerator memory accounting for builds without CUDA: there is no accelerator to count.
#include "memory/device_memory.h"

namespace pipeprof {

void attributeDeviceStreams(const std::vector<StreamTag>& /*owned*/) {}

void resetDevicePeakBytes(const c10::Device& /*device*/) {}

std::optional<Bytes> devicePeakBytes(const c10::Device& /*device*/) { return std::nullopt; }

TaggedStreams::TaggedStreams(const c10::Device& device, std::int64_t /*count*/) : device_(device) {}

TaggedStreams::~TaggedStreams() = default;

std::optional<c10::Stream> TaggedStreams::stream(std::int64_t /*tag*/) const { return std::nullopt; }

}  // namespace pipeprof
