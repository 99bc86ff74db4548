// Memory accounting on CPU: the CPU allocator, attributing allocations to a thread tag.
//
// It takes every CPU tensor's memory from aligned_host_memory.h (64-byte aligned blocks from
// malloc, which a later tensor of the same size reuses). Every allocation made while the calling
// thread carries a tag in [0, kMaxAllocationTags) is recorded {tag, size} in a side table and
// counted against that tag until the storage is freed, on whatever thread. Untagged allocations
// cost nothing beyond one thread-local read.
#include <pipeprof/runtime/memory_tracker.h>

#include "memory/aligned_host_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace pipeprof {
namespace {

thread_local std::int64_t tCurrentTag = kNoAllocationTag;

struct TagCounters {
  std::atomic<Bytes> live{0};
  std::atomic<Bytes> peak{0};
  std::atomic<Bytes> peakBeforeLast{0};  ///< peak as the latest allocation found it
};

/// The per-tag counters: one table for the process, as the CPU allocator itself is global.
std::array<TagCounters, kMaxAllocationTags>& counters() {
  static std::array<TagCounters, kMaxAllocationTags> table;
  return table;
}

bool validTag(std::int64_t tag) { return tag >= 0 && tag < kMaxAllocationTags; }

void raisePeak(TagCounters& c, Bytes live) {
  Bytes peak = c.peak.load(std::memory_order_relaxed);
  while (live > peak && !c.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

/// What the tracker remembers of a tagged allocation: enough to undo the accounting.
struct TrackedAllocation {
  std::int64_t tag;
  Bytes sizeBytes;
};

/// Tagged allocations by data pointer. A tracked DataPtr's context is its data pointer (as
/// LibTorch's raw_allocate/raw_deallocate require), so the accounting lives in this side
/// table, sharded by pointer to keep workers from contending on one lock.
class AllocationTable {
 public:
  void insert(void* data, TrackedAllocation allocation) {
    Shard& shard = shardOf(data);
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.allocations.emplace(data, std::move(allocation));
  }
  /// Removes and returns the allocation of data, if it is tracked.
  std::optional<TrackedAllocation> take(void* data) {
    Shard& shard = shardOf(data);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.allocations.find(data);
    if (it == shard.allocations.end()) {
      return std::nullopt;
    }
    TrackedAllocation allocation = std::move(it->second);
    shard.allocations.erase(it);
    return allocation;
  }

 private:
  static constexpr std::size_t kShards = 16;
  struct Shard {
    std::mutex mutex;
    std::unordered_map<void*, TrackedAllocation> allocations;
  };
  Shard& shardOf(void* data) { return shards_[(reinterpret_cast<std::uintptr_t>(data) >> 6U) % kShards]; }
  std::array<Shard, kShards> shards_;
};

AllocationTable& allocationTable() {
  static AllocationTable table;
  return table;
}

/// Frees a block of the tracking allocator, tagged or not (the deleter raw_deallocate uses).
void deleteTracked(void* data) {
  if (std::optional<TrackedAllocation> allocation = allocationTable().take(data)) {
    countFreedBytes(allocation->tag, allocation->sizeBytes);
  }
  freeAlignedHost(data);
}

/// LibTorch's CPU allocator while installed. Both allocate() signatures are declared, without
/// `override`, so the class is concrete against LibTorch 1.13 (const allocate) and 2.3+
/// (non-const allocate); copy_data overrides the pure virtual of LibTorch 2.x and is a plain
/// member on 1.13.
class TrackingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const { return allocateTracked(n); }
  c10::DataPtr allocate(size_t n) { return allocateTracked(n); }

  c10::DeleterFnPtr raw_deleter() const { return &deleteTracked; }

  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count > 0) {
      std::memcpy(dest, src, count);
    }
  }

 private:
  static c10::DataPtr allocateTracked(size_t n) {
    void* data = allocateAlignedHost(n);
    const std::int64_t tag = tCurrentTag;
    if (!validTag(tag) || data == nullptr) {
      return c10::DataPtr(data, data, &freeAlignedHost, c10::Device(c10::DeviceType::CPU));
    }
    const auto sizeBytes = static_cast<Bytes>(n);
    countAllocatedBytes(tag, sizeBytes);
    allocationTable().insert(data, TrackedAllocation{tag, sizeBytes});
    return c10::DataPtr(data, data, &deleteTracked, c10::Device(c10::DeviceType::CPU));
  }
};

}  // namespace

void installMemoryTracker() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never freed: the allocator must outlive every tensor it allocated.
    auto* allocator = new TrackingAllocator();
    c10::SetCPUAllocator(allocator, /*priority=*/std::numeric_limits<uint8_t>::max());
  });
}

ScopedAllocationTag::ScopedAllocationTag(std::int64_t tag) : previous_(tCurrentTag) { tCurrentTag = tag; }

ScopedAllocationTag::~ScopedAllocationTag() { tCurrentTag = previous_; }

std::int64_t currentAllocationTag() { return tCurrentTag; }

Bytes liveBytes(std::int64_t tag) {
  return validTag(tag) ? counters()[static_cast<std::size_t>(tag)].live.load(std::memory_order_relaxed) : 0;
}

Bytes peakBytes(std::int64_t tag) {
  return validTag(tag) ? counters()[static_cast<std::size_t>(tag)].peak.load(std::memory_order_relaxed) : 0;
}

Bytes peakBytesBeforeLastAllocation(std::int64_t tag) {
  return validTag(tag) ? counters()[static_cast<std::size_t>(tag)].peakBeforeLast.load(std::memory_order_relaxed) : 0;
}

void resetPeakBytes(std::int64_t tag) {
  if (!validTag(tag)) {
    return;
  }
  TagCounters& c = counters()[static_cast<std::size_t>(tag)];
  const Bytes live = c.live.load(std::memory_order_relaxed);
  c.peak.store(live, std::memory_order_relaxed);
  c.peakBeforeLast.store(live, std::memory_order_relaxed);
  // An allocation racing with the reset may have raised live after the load: keep peak >= live.
  raisePeak(c, c.live.load(std::memory_order_relaxed));
}

void countAllocatedBytes(std::int64_t tag, Bytes bytes) {
  if (!validTag(tag)) {
    return;
  }
  TagCounters& c = counters()[static_cast<std::size_t>(tag)];
  c.peakBeforeLast.store(c.peak.load(std::memory_order_relaxed), std::memory_order_relaxed);
  raisePeak(c, c.live.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void countFreedBytes(std::int64_t tag, Bytes bytes) {
  if (validTag(tag)) {
    counters()[static_cast<std::size_t>(tag)].live.fetch_sub(bytes, std::memory_order_relaxed);
  }
}

}  // namespace pipeprof
