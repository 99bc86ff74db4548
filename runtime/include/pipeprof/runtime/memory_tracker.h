// Memory accounting: an allocator wrapper that attributes every CPU allocation to a tag.
//
// The runtime tags each stage's worker thread with the stage index j, so a tensor
// counts against the stage whose worker allocated it until it is freed (on any thread).
// On CUDA the runtime counts, under the same tags, the caching allocator's blocks by the
// stage streams they were allocated on (device_memory.h).
// The layer profiler tags allocations with the layer being run. Untagged allocations (the
// caller's thread) are not attributed.
#pragma once

#include <pipeprof/core/units.h>

#include <cstdint>

namespace pipeprof {

/// Tag value meaning "not attributed".
inline constexpr std::int64_t kNoAllocationTag = -1;
/// Tags 0 .. kMaxAllocationTags-1 are counted.
inline constexpr std::int64_t kMaxAllocationTags = 1024;

/// Installs the tracking CPU allocator (idempotent, thread-safe). From then on every CPU tensor's
/// memory is a 64-byte aligned block from malloc, which a later tensor of the same size reuses
/// (LibTorch's own allocator, posix_memalign, left freed blocks too small for it: a training
/// step faulted fresh pages in every time). Called by the Pipe and the layer profiler, and by
/// pipeprof's executables at start-up (a block that raw_allocate took from LibTorch's allocator
/// before must not be given back through this one); tensors allocated before installation are
/// never counted.
void installMemoryTracker();

/// Sets the calling thread's tag for the scope; restores the previous tag on destruction.
class ScopedAllocationTag {
 public:
  explicit ScopedAllocationTag(std::int64_t tag);
  ~ScopedAllocationTag();
  ScopedAllocationTag(const ScopedAllocationTag&) = delete;
  ScopedAllocationTag& operator=(const ScopedAllocationTag&) = delete;

 private:
  std::int64_t previous_;
};

/// The calling thread's current tag.
std::int64_t currentAllocationTag();

/// Bytes currently allocated under tag and not yet freed.
Bytes liveBytes(std::int64_t tag);
/// Highest liveBytes(tag) since the last resetPeakBytes(tag).
Bytes peakBytes(std::int64_t tag);
/// The highest liveBytes(tag) of the window before its latest allocation: peakBytes(tag) less
/// this is how far that allocation (a backward's last: the gradient of its input) lifted the peak.
Bytes peakBytesBeforeLastAllocation(std::int64_t tag);
/// Starts a new peak window: peakBytes(tag) and peakBytesBeforeLastAllocation(tag) become liveBytes(tag).
void resetPeakBytes(std::int64_t tag);

/// Counts an allocation, or its free, that another allocator attributed to tag (the CUDA
/// caching allocator's blocks, by the stream they were allocated on). Invalid tags are ignored.
void countAllocatedBytes(std::int64_t tag, Bytes bytes);
void countFreedBytes(std::int64_t tag, Bytes bytes);

}  // namespace pipeprof
