// What the layer profiler and the loss profiler share: a tensor's bytes, where a measured
// piece's allocations count, how the device is waited for, and the median of timed runs.
#pragma once

#include "memory/device_memory.h"

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/memory_tracker.h>

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace pipeprof {

inline Bytes bytesOf(const torch::Tensor& tensor) {
  return tensor.defined() ? static_cast<Bytes>(tensor.numel() * tensor.element_size()) : 0;
}

inline Bytes bytesOf(const std::vector<torch::Tensor>& tensors) {
  Bytes total = 0;
  for (const torch::Tensor& t : tensors) total += bytesOf(t);
  return total;
}

inline void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

/// A copy of `tensor` that counts against no piece: made untagged, on CUDA on the device's
/// default stream, which no tag counts; the device is waited for before and after.
inline torch::Tensor copyOutsideTheTags(const torch::Tensor& tensor) {
  synchronize(tensor.device());
  const ScopedAllocationTag untagged(kNoAllocationTag);
  c10::OptionalStreamGuard defaultStream;
  if (tensor.is_cuda()) {
    defaultStream.reset_stream(
        c10::impl::getDeviceGuardImpl(tensor.device().type())->getDefaultStream(tensor.device()));
  }
  torch::Tensor copy = tensor.clone();
  synchronize(tensor.device());
  return copy;
}

/// Where what piece L (a layer, or the loss after the last layer) allocates is counted, under
/// memory-tracker tag L, while the scope lives: on CPU the calling thread's allocation tag; on
/// CUDA L's own stream, made current (the thread tag stays off, so no CPU allocation of the
/// thread counts). The caller synchronises the device before the next piece, which runs on
/// another stream.
class LayerMemoryScope {
 public:
  LayerMemoryScope(const TaggedStreams& streams, std::int64_t L)
      : stream_(streams.stream(L)), tag_(stream_ ? kNoAllocationTag : L) {
    if (stream_) guard_.reset_stream(*stream_);
  }

 private:
  std::optional<c10::Stream> stream_;
  ScopedAllocationTag tag_;
  c10::OptionalStreamGuard guard_;
};

}  // namespace pipeprof
