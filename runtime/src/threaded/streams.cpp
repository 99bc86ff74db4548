// Streams of a Pipe's CUDA stages and the synchronisation of tensors handed between them.
//
// Only device-generic c10 calls (VirtualGuardImpl, Stream, Event): the file compiles against a
// CPU-only LibTorch and dispatches to CUDA at run time.
#include "threaded/streams.h"

#include "memory/device_memory.h"

#include <c10/core/impl/VirtualGuardImpl.h>

namespace pipeprof {
namespace {

bool hasStreams(const torch::Device& device) { return device.is_cuda(); }

c10::Stream currentStream(const torch::Device& device) {
  return c10::impl::VirtualGuardImpl(device.type()).getStream(device);
}

c10::Stream poolStream(const torch::Device& device) {
  return c10::impl::VirtualGuardImpl(device.type()).getStreamFromGlobalPool(device);
}

ReadyEvent recordOn(const c10::Stream& stream) {
  auto event = std::make_shared<c10::Event>(stream.device_type());
  event->record(stream);
  return event;
}

void waitOn(const ReadyEvent& ready, const c10::Stream& stream) {
  if (ready) {
    ready->block(stream);
  }
}

/// Tells the caching allocator that `tensor`'s memory is used on `stream` (only for a tensor
/// on the stream's device: other memory is not that allocator's).
void useOn(const torch::Tensor& tensor, const c10::Stream& stream) {
  if (tensor.defined() && tensor.device() == stream.device()) {
    c10::impl::VirtualGuardImpl(stream.device_type()).recordDataPtrOnStream(tensor.storage().data_ptr(), stream);
  }
}

}  // namespace

PipeStreams::PipeStreams(std::vector<torch::Device> devices, std::vector<std::int64_t> memoryTags)
    : devices_(std::move(devices)), memoryTags_(std::move(memoryTags)) {
  if (memoryTags_.empty()) {
    for (std::size_t j = 0; j < devices_.size(); ++j) memoryTags_.push_back(static_cast<std::int64_t>(j));
  }
  for (const auto& device : devices_) {
    if (!hasStreams(device)) {
      streams_.emplace_back();
      continue;
    }
    streams_.push_back(StageStreams{poolStream(device), {poolStream(device), poolStream(device)}});
    any_ = true;
  }
}

const std::optional<PipeStreams::StageStreams>& PipeStreams::of(std::int64_t j) const {
  return streams_[static_cast<std::size_t>(j)];
}

const c10::Stream* PipeStreams::copyStream(std::int64_t j, CopyDirection direction) const {
  const auto& streams = of(j);
  return streams ? &streams->copy[static_cast<std::size_t>(direction)] : nullptr;
}

void PipeStreams::attributeMemory() const {
  std::vector<StreamTag> owned;
  for (std::size_t j = 0; j < streams_.size(); ++j) {
    if (!streams_[j]) continue;
    const std::int64_t tag = memoryTags_.at(j);
    owned.emplace_back(streams_[j]->compute, tag);
    for (const c10::Stream& copy : streams_[j]->copy) owned.emplace_back(copy, tag);
  }
  attributeDeviceStreams(owned);
}

ReadyEvent PipeStreams::markReady(std::int64_t j) const {
  const torch::Device& device = devices_[static_cast<std::size_t>(j)];
  return hasStreams(device) ? recordOn(currentStream(device)) : nullptr;
}

Handover PipeStreams::transfer(Handover handover, std::int64_t from, std::int64_t to, CopyDirection direction) const {
  const torch::Device& target = devices_[static_cast<std::size_t>(to)];
  if (devices_[static_cast<std::size_t>(from)] == target) {
    return handover;
  }
  torch::NoGradGuard noGrad;  // the copy becomes a leaf of the consumer's graph: no graph needed
  const c10::Stream* source = copyStream(from, direction);
  const c10::Stream* destination = copyStream(to, direction);
  // Current on both devices: ATen's cross-device copy runs on the source's current stream and
  // synchronises it with the destination's both ways.
  c10::OptionalStreamGuard onSource;
  c10::OptionalStreamGuard onDestination;
  if (source != nullptr) {
    onSource.reset_stream(*source);
    waitOn(handover.ready, *source);
  }
  if (destination != nullptr) {
    onDestination.reset_stream(*destination);
  }
  for (auto& tensor : handover.tensors) {
    if (!tensor.defined()) {
      continue;
    }
    torch::Tensor copied = tensor.to(target);
    if (source != nullptr) {
      useOn(tensor, *source);
    }
    tensor = std::move(copied);
  }
  // A copy to the CPU is synchronous: nothing has to wait for it.
  return {std::move(handover.tensors), destination != nullptr ? recordOn(*destination) : nullptr};
}

Tensors PipeStreams::accept(Handover handover, std::int64_t j) const {
  const torch::Device& device = devices_[static_cast<std::size_t>(j)];
  if (!hasStreams(device)) {
    return std::move(handover.tensors);
  }
  const c10::Stream consumer = currentStream(device);
  waitOn(handover.ready, consumer);
  for (const auto& tensor : handover.tensors) {
    useOn(tensor, consumer);
  }
  return std::move(handover.tensors);
}

void PipeStreams::fork() const {
  if (!any_) {
    return;
  }
  for (std::size_t j = 0; j < streams_.size(); ++j) {
    if (streams_[j]) {
      waitOn(recordOn(currentStream(devices_[j])), streams_[j]->compute);
    }
  }
}

void PipeStreams::join() const {
  if (!any_) {
    return;
  }
  for (std::size_t j = 0; j < streams_.size(); ++j) {
    if (streams_[j]) {
      waitOn(recordOn(streams_[j]->compute), currentStream(devices_[j]));
    }
  }
}

PipeStreams::ComputeScope::ComputeScope(const PipeStreams& streams, std::int64_t j) {
  if (const auto& own = streams.of(j)) {
    guard_.reset_stream(own->compute);
  }
}

PipeStreams::InOrderComputeScope::InOrderComputeScope(const PipeStreams& streams, std::int64_t j) {
  const auto& own = streams.of(j);
  if (!own) return;
  caller_ = currentStream(own->compute.device());
  compute_ = own->compute;
  waitOn(recordOn(*caller_), *compute_);
  guard_.reset_stream(*compute_);
}

PipeStreams::InOrderComputeScope::~InOrderComputeScope() {
  if (compute_) waitOn(recordOn(*compute_), *caller_);
}

}  // namespace pipeprof
