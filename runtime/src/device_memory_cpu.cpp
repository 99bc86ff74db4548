// Accelerator memory accounting for builds without CUDA: there is no accelerator to count.
#include "device_memory.h"

namespace pipeprof {

void attributeDeviceStreams(const std::vector<StreamTag>& /*owned*/) {}

}  // namespace pipeprof
