// Freed host blocks too large for glibc to keep, kept for the next request of their size.
//
// glibc serves a block above its mmap threshold with mmap and unmaps it when freed, and refuses a
// threshold past 32 MiB on 64-bit hosts (keepFreedHostMemory sets that much). A stage whose
// activations pass it faults every page of them in at every allocation: resnet at 128 samples a
// micro-batch freed 37 blocks of 32 MiB a step, faulted 300,000 pages a step and took 4.9-5.1 s
// (docs/runtime.md, "Host memory between steps"). This cache takes such blocks when they are
// freed and hands each back to the next request of the same rounded size, so a training step
// reuses the pages of the one before.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>

namespace pipeprof {

class LargeBlockCache {
 public:
  /// Blocks of at least this many bytes are cached: above glibc's largest mmap threshold.
  static constexpr std::size_t kMinBlockBytes = std::size_t{32} << 20;
  /// Cached sizes are rounded up to this, so that sizes a step apart share blocks.
  static constexpr std::size_t kGranuleBytes = std::size_t{2} << 20;

  /// A cache holding at most capacityBytes of freed blocks; past it, the oldest go back to
  /// the system first.
  explicit LargeBlockCache(std::size_t capacityBytes);
  ~LargeBlockCache();
  LargeBlockCache(const LargeBlockCache&) = delete;
  LargeBlockCache& operator=(const LargeBlockCache&) = delete;

  /// Whether a block of `bytes` is one this cache takes.
  static bool caches(std::size_t bytes) { return bytes >= kMinBlockBytes; }
  /// `bytes` rounded up to kGranuleBytes: the size to allocate a cached block with.
  static std::size_t blockBytes(std::size_t bytes);

  /// A freed block of blockBytes(bytes), or nullptr when none is cached.
  void* take(std::size_t bytes);
  /// Keeps a block of blockBytes(bytes) taken from malloc, freeing the oldest past the
  /// capacity (this one too, if it alone is past it).
  void give(void* block, std::size_t bytes);
  /// Frees every cached block.
  void release();

  std::size_t cachedBytes() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<std::pair<void*, std::size_t>> blocks_;  // (block, its blockBytes), oldest first
  std::size_t cached_ = 0;
};

/// The process's cache, which allocateAlignedHost uses: a quarter of the memory the process may
/// use (the host's physical memory, or its control group's limit where lower: a container's),
/// all of it given back when malloc fails.
LargeBlockCache& largeBlockCache();

}  // namespace pipeprof
