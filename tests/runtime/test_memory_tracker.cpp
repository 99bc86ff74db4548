// Tests for the per-tag CPU allocation accounting and the CPU allocator it installs.
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/torch_environment.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace pipeprof {
namespace {

constexpr std::int64_t kTag = 7;
constexpr std::int64_t kOtherTag = 8;

TEST(MemoryTracker, CountsTaggedAllocationsUntilFreed) {
  installMemoryTracker();
  installMemoryTracker();  // idempotent
  const Bytes before = liveBytes(kTag);
  torch::Tensor a;
  {
    ScopedAllocationTag tag(kTag);
    EXPECT_EQ(currentAllocationTag(), kTag);
    a = torch::empty({1000}, torch::kFloat32);
  }
  EXPECT_EQ(currentAllocationTag(), kNoAllocationTag);
  EXPECT_EQ(liveBytes(kTag) - before, 4000);
  a = torch::Tensor();
  EXPECT_EQ(liveBytes(kTag), before);
}

TEST(MemoryTracker, PeakIsTheHighestLiveSinceReset) {
  installMemoryTracker();
  resetPeakBytes(kTag);
  const Bytes base = liveBytes(kTag);
  EXPECT_EQ(peakBytes(kTag), base);
  {
    ScopedAllocationTag tag(kTag);
    auto a = torch::empty({256}, torch::kFloat64);  // 2048 bytes
    auto b = torch::empty({128}, torch::kFloat64);  // 1024 bytes
    a = torch::Tensor();
    auto c = torch::empty({64}, torch::kFloat64);  // 512 bytes
    EXPECT_EQ(liveBytes(kTag) - base, 1536);
  }
  EXPECT_EQ(peakBytes(kTag) - base, 3072);
  EXPECT_EQ(liveBytes(kTag), base);
  resetPeakBytes(kTag);
  EXPECT_EQ(peakBytes(kTag), base);
}

// The peak as the latest allocation found it: how far that allocation lifted the peak is
// peakBytes less it (0 where the window peaked earlier).
TEST(MemoryTracker, ThePeakBeforeTheLatestAllocationIsKeptApart) {
  installMemoryTracker();
  resetPeakBytes(kTag);
  const Bytes base = liveBytes(kTag);
  EXPECT_EQ(peakBytesBeforeLastAllocation(kTag), base);
  {
    ScopedAllocationTag tag(kTag);
    auto a = torch::empty({256}, torch::kFloat64);  // 2048 bytes
    auto b = torch::empty({128}, torch::kFloat64);  // 1024 bytes: the peak, 3072
    EXPECT_EQ(peakBytesBeforeLastAllocation(kTag) - base, 2048);
    a = torch::Tensor();
    auto c = torch::empty({64}, torch::kFloat64);  // 512 bytes, below the peak
    EXPECT_EQ(peakBytesBeforeLastAllocation(kTag) - base, 3072);
    EXPECT_EQ(peakBytes(kTag) - base, 3072);
    b = torch::Tensor();
    c = torch::Tensor();
    resetPeakBytes(kTag);
    EXPECT_EQ(peakBytesBeforeLastAllocation(kTag), base);
    auto d = torch::empty({32}, torch::kFloat64);  // 256 bytes
    EXPECT_EQ(peakBytes(kTag) - peakBytesBeforeLastAllocation(kTag), 256);
  }
}

TEST(MemoryTracker, FreedOnAnotherThreadCountsAgainstTheAllocatingTag) {
  installMemoryTracker();
  const Bytes before = liveBytes(kOtherTag);
  torch::Tensor a;
  std::thread worker([&] {
    ScopedAllocationTag tag(kOtherTag);
    a = torch::ones({10, 10}, torch::kFloat32);
  });
  worker.join();
  EXPECT_EQ(liveBytes(kOtherTag) - before, 400);
  EXPECT_FLOAT_EQ(a.sum().item<float>(), 100.0f);  // the memory is usable
  a = torch::Tensor();
  EXPECT_EQ(liveBytes(kOtherTag), before);
}

TEST(MemoryTracker, NestedTagsRestoreAndUntaggedIsNotCounted) {
  installMemoryTracker();
  const Bytes before = liveBytes(kTag);
  {
    ScopedAllocationTag outer(kTag);
    {
      ScopedAllocationTag inner(kNoAllocationTag);
      auto untracked = torch::empty({100}, torch::kFloat32);
      EXPECT_EQ(liveBytes(kTag), before);
    }
    EXPECT_EQ(currentAllocationTag(), kTag);
  }
  EXPECT_EQ(liveBytes(-1), 0);
  EXPECT_EQ(liveBytes(kMaxAllocationTags), 0);
  EXPECT_EQ(peakBytes(kMaxAllocationTags), 0);
}

TEST(MemoryTracker, ClonedAndResizedTensorsAreCounted) {
  installMemoryTracker();
  const Bytes before = liveBytes(kTag);
  auto source = torch::arange(16, torch::kFloat32);
  torch::Tensor copy;
  {
    ScopedAllocationTag tag(kTag);
    copy = source.clone();
  }
  EXPECT_EQ(liveBytes(kTag) - before, 64);
  EXPECT_TRUE(torch::equal(copy, source));
  copy = torch::Tensor();
  EXPECT_EQ(liveBytes(kTag), before);
}

TEST(MemoryTracker, EveryCpuTensorIsAlignedTo64Bytes) {
  installMemoryTracker();
  for (std::int64_t elements : {1, 3, 17, 1000, 4099, 1 << 18}) {
    for (std::int64_t tag : {kNoAllocationTag, kTag}) {
      ScopedAllocationTag scope(tag);
      torch::Tensor t = torch::full({elements}, 2.0F);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 64, 0U) << elements << " elements";
      EXPECT_EQ(t.sum().item<float>(), 2.0F * static_cast<float>(elements));
    }
  }
}

#ifdef __GLIBC__
// A training step frees a tensor and the next step allocates one of the same size, while small
// objects made in between live on. With posix_memalign (LibTorch's own allocator) the freed block
// was too small for the next request and every step took fresh heap: this loop grew the heap by
// 12.6 MB.
TEST(MemoryTracker, ATensorFreedByOneStepServesTheNextStepsTensorOfTheSameSize) {
  ASSERT_TRUE(keepFreedHostMemory() || std::getenv("GLIBC_TUNABLES") != nullptr);
  installMemoryTracker();
  constexpr std::int64_t kElements = 1 << 18;  // 1 MiB of floats
  constexpr std::size_t kTensorBytes = kElements * sizeof(float);
  std::vector<std::unique_ptr<char[]>> survivors;
  auto step = [&](int i) {
    torch::Tensor activation = torch::ones({kElements});
    survivors.push_back(std::make_unique<char[]>(40 + static_cast<std::size_t>(i % 3) * 16));
  };
  step(0);
  const struct mallinfo2 before = mallinfo2();
  for (int i = 1; i <= 50; ++i) step(i);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_LE(after.arena, before.arena + 2 * kTensorBytes)
      << "the heap grew by " << (after.arena - before.arena) << " bytes over 50 steps of one 1 MiB tensor";
}
#endif

}  // namespace
}  // namespace pipeprof
