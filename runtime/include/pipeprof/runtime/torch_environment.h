// Where LibTorch runs: its version, its intra-op threads (and OpenBLAS's), and torch devices for device names.
#pragma once

#include <pipeprof/core/device.h>

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// Sets LibTorch's intra-op threads and, when OpenBLAS is linked in, OpenBLAS's own pool (two
/// pipeline workers calling GEMM on a small machine otherwise spin against each other's
/// threads: a 2-partition CPU step measured 10x slower). Throws std::invalid_argument for
/// threads < 1.
void setIntraOpThreads(std::int64_t threads);

/// LibTorch's version, e.g. "1.13.0".
std::string torchVersion();

/// torch::Device for "cpu" / "cuda:N". Throws std::invalid_argument when CUDA is not available
/// or the index is out of range, naming the device and how many CUDA devices there are.
torch::Device torchDevice(const DeviceDesc& device);
std::vector<torch::Device> torchDevices(const std::vector<DeviceDesc>& devices);

}  // namespace pipeprof
