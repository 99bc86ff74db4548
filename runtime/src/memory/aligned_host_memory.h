// Host memory for CPU tensors: 64-byte aligned blocks taken from malloc, so that a block freed
// by one training step serves the next step's tensor of the same size.
//
// LibTorch's CPU allocator calls posix_memalign. glibc 2.36's memalign asks malloc for
// size + alignment + 32 bytes and gives back what it does not use, so the block it returns is
// exactly `size`; once a small allocation has taken the space after it, that freed block is too
// small for the next request of the same size, which glibc then serves from fresh heap. Fresh
// pages fault in: an AdamW step of a 512x512 layer faulted 256 pages every step, 3.2-3.7 ms
// against 0.25 ms (docs/runtime.md, "Host memory between steps"). A block from malloc(size + 64) is
// freed whole and fits the same request again. Blocks of 32 MiB and more, which glibc unmaps when
// freed whatever it is told, go back to a LargeBlockCache instead (large_block_cache.h).
#pragma once

#include <cstddef>

namespace pipeprof {

/// Alignment of every block, as LibTorch's CPU allocator gives (vectorised kernels expect it).
inline constexpr std::size_t kHostAlignment = 64;

/// A block of `bytes` aligned to kHostAlignment, or nullptr for 0 bytes. Throws c10::Error
/// naming the size when malloc fails, as LibTorch's allocator does.
void* allocateAlignedHost(std::size_t bytes);

/// Frees a block of allocateAlignedHost (nullptr is ignored).
void freeAlignedHost(void* data);

}  // namespace pipeprof
