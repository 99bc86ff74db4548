// Accelerator memory accounting from the CUDA caching allocator's trace: every block allocated
// on a stream that a stage owns counts against that stage until it is freed. Blocks
// allocated before the tracker was attached (the first Pipe's step attaches it) are not seen.
//
// The allocator calls the tracker under its per-device lock, on the allocating or freeing
// thread; the ledger's own lock is a leaf (only the memory tracker's atomic counters are
// touched while it is held) and nothing here allocates device memory. When another set of
// streams takes over (another Pipe's first step) the live blocks are walked once, to move
// those of streams that changed hands; a Pipe stepping again costs one map comparison.
//
// A block counts as the size the allocator hands out for the request (roundToAllocatorBlock:
// the trace names the requested size), which is what the simulator predicts on a CUDA profile.
#include "memory/device_memory.h"

#include <pipeprof/core/allocator_rounding.h>
#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/memory_tracker.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace pipeprof {
namespace {

using c10::cuda::CUDACachingAllocator::TraceEntry;

/// A live block: the stream it was allocated on, its size and the tag it counts against.
struct LiveBlock {
  void* stream;
  Bytes bytes;
  std::int64_t tag;
};

/// Every live block of the caching allocator (so that a stream changing hands moves the blocks
/// kept for it), and the streams that count.
class StreamLedger {
 public:
  void own(const std::unordered_map<void*, std::int64_t>& owners) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The same Pipe stepping again: every block already counts against its stream's owner.
    if (owners == owners_) return;
    owners_ = owners;
    for (auto& [address, block] : blocks_) {
      const std::int64_t tag = ownerOf(block.stream);
      if (tag == block.tag) continue;
      countFreedBytes(block.tag, block.bytes);
      countAllocatedBytes(tag, block.bytes);
      block.tag = tag;
    }
  }

  void onTrace(const TraceEntry& entry) {
    switch (entry.action_) {
      case TraceEntry::ALLOC:
        allocated(static_cast<std::size_t>(entry.addr_), entry.stream_,
                  roundToAllocatorBlock(static_cast<Bytes>(entry.size_)));
        break;
      // A block freed while other streams still use it completes its free later; it counts as
      // freed at the request, as a tensor does on CPU. The first of the two ends it.
      case TraceEntry::FREE_REQUESTED:
      case TraceEntry::FREE_COMPLETED: freed(static_cast<std::size_t>(entry.addr_)); break;
      default: break;
    }
  }

 private:
  std::int64_t ownerOf(void* stream) const {
    const auto it = owners_.find(stream);
    return it == owners_.end() ? kNoAllocationTag : it->second;
  }

  void allocated(std::size_t address, void* stream, Bytes bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::int64_t tag = ownerOf(stream);
    blocks_[address] = LiveBlock{stream, bytes, tag};
    countAllocatedBytes(tag, bytes);  // lock-free counters; an unowned tag is ignored
  }

  void freed(std::size_t address) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = blocks_.find(address);
    if (it == blocks_.end()) return;
    countFreedBytes(it->second.tag, it->second.bytes);
    blocks_.erase(it);
  }

  std::mutex mutex_;
  std::unordered_map<void*, std::int64_t> owners_;     ///< CUDA stream -> tag
  std::unordered_map<std::size_t, LiveBlock> blocks_;  ///< block address -> block
};

StreamLedger& ledger() {
  // Never destroyed: the allocator may call the tracker until the process ends.
  static auto* instance = new StreamLedger();
  static std::once_flag attached;
  std::call_once(attached, [] {
    c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(
        [](const TraceEntry& entry) { instance->onTrace(entry); });
  });
  return *instance;
}

}  // namespace

void attributeDeviceStreams(const std::vector<StreamTag>& owned) {
  std::unordered_map<void*, std::int64_t> owners;
  for (const auto& [stream, tag] : owned) {
    if (stream.device_type() != c10::DeviceType::CUDA) continue;
    owners[c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, stream).stream()] = tag;
  }
  // A process that never owned a CUDA stream has nothing to disown: it attaches no tracker.
  static std::atomic<bool> used{false};
  if (owners.empty() && !used.load()) return;
  used = true;
  ledger().own(owners);
}

void resetDevicePeakBytes(const c10::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
}

std::optional<Bytes> devicePeakBytes(const c10::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  constexpr std::size_t kAggregate = 0;  // StatType::AGGREGATE: all pools together
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
  return static_cast<Bytes>(stats.allocated_bytes[kAggregate].peak);
}

TaggedStreams::TaggedStreams(const c10::Device& device, std::int64_t count) : device_(device) {
  if (!device.is_cuda()) return;
  const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
  c10::cuda::CUDAGuard guard(index);
  std::vector<StreamTag> owned;
  try {
    for (std::int64_t tag = 0; tag < count; ++tag) {
      cudaStream_t handle = nullptr;
      C10_CUDA_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking));
      handles_.push_back(handle);
      streams_.push_back(c10::cuda::getStreamFromExternal(handle, index).unwrap());
      owned.emplace_back(streams_.back(), tag);
    }
  } catch (...) {
    for (void* handle : handles_) (void)cudaStreamDestroy(static_cast<cudaStream_t>(handle));
    throw;
  }
  attributeDeviceStreams(owned);
}

TaggedStreams::~TaggedStreams() {
  if (handles_.empty()) return;
  c10::cuda::CUDAGuard guard(device_.has_index() ? device_.index() : 0);
  // Nothing may throw from here: a failure leaves workspaces or cached blocks behind, no more.
  try {
    clearLibraryWorkspaces({device_});  // synchronises; frees the workspaces of these streams
    attributeDeviceStreams({});
    c10::cuda::CUDACachingAllocator::emptyCache();  // the cached blocks of these streams
  } catch (...) {
  }
  for (void* handle : handles_) (void)cudaStreamDestroy(static_cast<cudaStream_t>(handle));
}

std::optional<c10::Stream> TaggedStreams::stream(std::int64_t tag) const {
  if (tag < 0 || tag >= static_cast<std::int64_t>(streams_.size())) return std::nullopt;
  return streams_[static_cast<std::size_t>(tag)];
}

}  // namespace pipeprof
