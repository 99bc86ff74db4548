// Freed host blocks too large for glibc to keep (large_block_cache.h).
#include "memory/large_block_cache.h"

#include "memory/host_memory_size.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

namespace pipeprof {
namespace {

/// A quarter of what the process may use (1 GiB when that cannot be read).
std::size_t quarterOfUsableMemory() {
  const std::optional<std::size_t> bytes = usableHostMemoryBytes();
  return bytes ? *bytes / 4 : std::size_t{1} << 30;
}

}  // namespace

LargeBlockCache::LargeBlockCache(std::size_t capacityBytes) : capacity_(capacityBytes) {}

LargeBlockCache::~LargeBlockCache() { release(); }

std::size_t LargeBlockCache::blockBytes(std::size_t bytes) {
  return (bytes + kGranuleBytes - 1) / kGranuleBytes * kGranuleBytes;
}

void* LargeBlockCache::take(std::size_t bytes) {
  const std::size_t size = blockBytes(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // The newest block of the size: its pages are the likeliest still to be cached by the CPU.
  const auto found =
      std::find_if(blocks_.rbegin(), blocks_.rend(), [&](const auto& entry) { return entry.second == size; });
  if (found == blocks_.rend()) return nullptr;
  void* block = found->first;
  blocks_.erase(std::next(found).base());
  cached_ -= size;
  return block;
}

void LargeBlockCache::give(void* block, std::size_t bytes) {
  const std::size_t size = blockBytes(bytes);
  std::vector<void*> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace_back(block, size);
    cached_ += size;
    while (cached_ > capacity_ && !blocks_.empty()) {
      evicted.push_back(blocks_.front().first);
      cached_ -= blocks_.front().second;
      blocks_.pop_front();
    }
  }
  for (void* old : evicted) std::free(old);  // outside the lock: munmap takes its time
}

void LargeBlockCache::release() {
  std::deque<std::pair<void*, std::size_t>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(blocks_);
    cached_ = 0;
  }
  for (const auto& entry : blocks) std::free(entry.first);
}

std::size_t LargeBlockCache::cachedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

LargeBlockCache& largeBlockCache() {
  // Never destroyed: tensors freed during static destruction still give their blocks back.
  static auto* cache = new LargeBlockCache(quarterOfUsableMemory());
  return *cache;
}

}  // namespace pipeprof
