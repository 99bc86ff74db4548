// Tests for the per-tag CPU allocation accounting.
#include <pipeprof/runtime/memory_tracker.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

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

}  // namespace
}  // namespace pipeprof
