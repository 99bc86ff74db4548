// Memory accounting on CPU: a c10::Allocator wrapper that attributes allocations to a thread tag.
//
// Every allocation made while the calling thread carries a tag in [0, kMaxAllocationTags) is
// recorded {tag, size, original DataPtr} in a side table and gets a deleter that subtracts the
// size from that tag when the storage is freed, on whatever thread. Untagged allocations are passed through
// untouched (no extra cost beyond one thread-local read).
#include <pipeprof/runtime/memory_tracker.h>

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

/// What the tracker remembers of a tagged allocation: enough to undo the accounting and free it.
struct TrackedAllocation {
  std::int64_t tag;
  Bytes sizeBytes;
  c10::DataPtr original;
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

/// The raw deleter of the allocator that was wrapped (null when it has none).
c10::DeleterFnPtr& previousRawDeleter() {
  static c10::DeleterFnPtr deleter = nullptr;
  return deleter;
}

void deleteTracked(void* data) {
  std::optional<TrackedAllocation> allocation = allocationTable().take(data);
  if (!allocation) {
    // An untagged allocation handed out by the wrapped allocator, freed via raw_deallocate.
    if (c10::DeleterFnPtr deleter = previousRawDeleter()) {
      deleter(data);
    }
    return;
  }
  countFreedBytes(allocation->tag, allocation->sizeBytes);
  // allocation->original is destroyed here, which frees the memory.
}

/// Wraps the previously installed CPU allocator. Both allocate() signatures are declared,
/// without `override`, so the class is concrete against LibTorch 1.13 (const allocate) and
/// 2.3+ (non-const allocate); copy_data overrides the pure virtual of LibTorch 2.x and is a
/// plain member on 1.13.
class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* previous) : previous_(previous) {
    previousRawDeleter() = previous_->raw_deleter();
  }

  c10::DataPtr allocate(size_t n) const { return track(previous_->allocate(n), n); }
  c10::DataPtr allocate(size_t n) { return track(previous_->allocate(n), n); }

  c10::DeleterFnPtr raw_deleter() const { return previousRawDeleter() != nullptr ? &deleteTracked : nullptr; }

  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count > 0) {
      std::memcpy(dest, src, count);
    }
  }

 private:
  static c10::DataPtr track(c10::DataPtr original, size_t n) {
    const std::int64_t tag = tCurrentTag;
    if (!validTag(tag) || n == 0 || original.get() == nullptr) {
      return original;
    }
    const auto sizeBytes = static_cast<Bytes>(n);
    countAllocatedBytes(tag, sizeBytes);
    void* data = original.get();
    const c10::Device device = original.device();
    allocationTable().insert(data, TrackedAllocation{tag, sizeBytes, std::move(original)});
    return c10::DataPtr(data, data, &deleteTracked, device);
  }

  c10::Allocator* previous_;
};

}  // namespace

void installMemoryTracker() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never freed: the allocator must outlive every tensor it allocated.
    auto* allocator = new TrackingAllocator(c10::GetCPUAllocator());
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

void resetPeakBytes(std::int64_t tag) {
  if (!validTag(tag)) {
    return;
  }
  TagCounters& c = counters()[static_cast<std::size_t>(tag)];
  c.peak.store(c.live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  // An allocation racing with the reset may have raised live after the load: keep peak >= live.
  raisePeak(c, c.live.load(std::memory_order_relaxed));
}

void countAllocatedBytes(std::int64_t tag, Bytes bytes) {
  if (!validTag(tag)) {
    return;
  }
  TagCounters& c = counters()[static_cast<std::size_t>(tag)];
  raisePeak(c, c.live.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void countFreedBytes(std::int64_t tag, Bytes bytes) {
  if (validTag(tag)) {
    counters()[static_cast<std::size_t>(tag)].live.fetch_sub(bytes, std::memory_order_relaxed);
  }
}

}  // namespace pipeprof
