// The block sizes PyTorch's CUDA caching allocator hands out for a request, for predicting CUDA memory.
//
// Rules of c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch; the same in LibTorch 1.13 and 2.x,
// with the allocator's default configuration: no roundup_power2_divisions, no
// expandable_segments, max_split_size unlimited):
//
//   round_size(size)          size < kMinBlockSize (512) -> 512; else the next multiple of 512
//   pool                      rounded size <= kSmallSize (1 MiB): small pool, else large pool
//   get_allocation_size(size) the segment cudaMalloc'ed when no cached block fits:
//                             <= 1 MiB -> kSmallBuffer (2 MiB); < kMinLargeAlloc (10 MiB) ->
//                             kLargeBuffer (20 MiB); else the next multiple of kRoundLarge (2 MiB)
//   should_split(block, size) small pool: remaining >= 512; large pool: remaining > kSmallSize
//
// So a request served from a fresh segment gets a block of round_size(size), except a large
// request of 10 MiB or more, whose segment is its size rounded up to 2 MiB and is split only
// when more than 1 MiB would remain: then the block is the whole segment. (A request served
// from a cached block that is split no further can get more; that depends on the history of
// the cache and is not modelled.)
#pragma once

#include <pipeprof/core/units.h>

namespace pipeprof {

inline constexpr Bytes kAllocatorMinBlockBytes = 512;           ///< kMinBlockSize
inline constexpr Bytes kAllocatorSmallSizeBytes = 1048576;      ///< kSmallSize: largest "small" request
inline constexpr Bytes kAllocatorMinLargeAllocBytes = 10485760; ///< kMinLargeAlloc
inline constexpr Bytes kAllocatorRoundLargeBytes = 2097152;     ///< kRoundLarge

/// `bytes` rounded up to a multiple of `multiple` (> 0).
constexpr Bytes roundUpToMultiple(Bytes bytes, Bytes multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

/// The block the caching allocator hands out for one request of `bytes` served from a fresh
/// segment (the rules above); 0 for 0 (no allocation). Blocks are multiples of 512 bytes, so a
/// sum of blocks is a multiple of kAllocatorMinBlockBytes as well.
constexpr Bytes roundToAllocatorBlock(Bytes bytes) {
  if (bytes <= 0) return 0;
  const Bytes size = roundUpToMultiple(bytes, kAllocatorMinBlockBytes);  // round_size
  if (size < kAllocatorMinLargeAllocBytes) return size;  // split off a 2 MiB or 20 MiB segment
  const Bytes segment = roundUpToMultiple(size, kAllocatorRoundLargeBytes);
  return segment - size > kAllocatorSmallSizeBytes ? size : segment;  // should_split, large pool
}

}  // namespace pipeprof
