// Tests for profiler_skip_tracker.cpp: what the layer profiler's skip tracker records and hands out.
#include "layer_profiling/profiler_skip_tracker.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace pipeprof::layer_profiling {
namespace {

SkipKey key(const std::string& name) { return {Namespace::global(), name}; }

/// A float tensor of `elements` elements (4 bytes each) with a graph behind it.
torch::Tensor computed(std::int64_t elements) { return torch::ones({elements}, torch::requires_grad()) * 2; }

TEST(ProfilerSkipTracker, RecordsTheBytesEachLayerStashedUnderEachName) {
  ProfilerSkipTracker skips(ProfilerSkipTracker::HandOut::AsStashed);
  skips.setLayer(2);
  skips.stash(key("a"), computed(32));
  skips.setLayer(3);
  skips.stash(key("b"), computed(4));
  skips.stash(key("c"), computed(8));
  EXPECT_EQ(skips.stashedBytes(2, "a"), 128);
  EXPECT_EQ(skips.stashedBytes(3, "b"), 16);
  EXPECT_EQ(skips.stashedBytes(3, "c"), 32);
  // A name the layer did not stash: its only stash, or nothing when it has several.
  EXPECT_EQ(skips.stashedBytes(2, "renamed"), 128);
  EXPECT_EQ(skips.stashedBytes(3, "renamed"), 0);
  EXPECT_EQ(skips.stashedBytes(5, "a"), 0);
}

TEST(ProfilerSkipTracker, AnUnsavedSkipIsOneNothingKeepsAliveAfterItsPop) {
  ProfilerSkipTracker skips(ProfilerSkipTracker::HandOut::AsStashed);
  skips.setLayer(0);
  skips.stash(key("kept"), computed(16));
  skips.stash(key("dropped"), computed(8));
  skips.setLayer(4);
  const torch::Tensor kept = skips.pop(key("kept"));  // as a backward graph saving it would
  skips.pop(key("dropped"));
  skips.recordUnsavedBytes();
  EXPECT_EQ(skips.unsavedBytes(0, "kept"), 0);
  EXPECT_EQ(skips.unsavedBytes(0, "dropped"), 32);
  skips.clear();  // the figures stay
  EXPECT_EQ(skips.unsavedBytes(0, "dropped"), 32);
  EXPECT_EQ(skips.stashedBytes(0, "kept"), 64);
}

TEST(ProfilerSkipTracker, APopBeforeItsStashNamesTheSkip) {
  ProfilerSkipTracker skips(ProfilerSkipTracker::HandOut::AsStashed);
  try {
    skips.pop(key("skip0"));
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("'skip0' was popped before it was stashed"), std::string::npos);
  }
}

TEST(ProfilerSkipTracker, HandsOutTheStashedTensorOrADetachedCopyOfIt) {
  const torch::Tensor tensor = computed(4);
  ProfilerSkipTracker asStashed(ProfilerSkipTracker::HandOut::AsStashed);
  asStashed.stash(key("s"), tensor);
  EXPECT_TRUE(asStashed.pop(key("s")).is_same(tensor));

  ProfilerSkipTracker leaf(ProfilerSkipTracker::HandOut::DetachedLeaf);
  leaf.stash(key("s"), tensor);
  const torch::Tensor handedLeaf = leaf.pop(key("s"));
  EXPECT_TRUE(handedLeaf.is_leaf());
  EXPECT_TRUE(handedLeaf.requires_grad());
  EXPECT_EQ(handedLeaf.data_ptr(), tensor.data_ptr());  // detached, not copied

  ProfilerSkipTracker withoutGrad(ProfilerSkipTracker::HandOut::DetachedWithoutGrad);
  withoutGrad.stash(key("s"), tensor);
  const torch::Tensor handedPlain = withoutGrad.pop(key("s"));
  EXPECT_FALSE(handedPlain.requires_grad());
  EXPECT_EQ(handedPlain.data_ptr(), tensor.data_ptr());
}

TEST(ProfilerSkipTracker, KeepsWhatItHandsOutByStashLayerOnlyWhenAsked) {
  ProfilerSkipTracker skips(ProfilerSkipTracker::HandOut::DetachedLeaf);
  skips.setLayer(1);
  skips.stash(key("early"), computed(4));
  skips.setLayer(2);
  skips.pop(key("early"));
  EXPECT_TRUE(skips.takeHandedOut().empty());

  skips.keepHandedOut();
  skips.setLayer(4);
  skips.stash(key("s"), computed(4));
  skips.setLayer(6);
  const torch::Tensor popped = skips.pop(key("s"));
  const auto handedOut = skips.takeHandedOut();
  ASSERT_EQ(handedOut.size(), 1u);
  EXPECT_EQ(handedOut.front().first, (ProfilerSkipTracker::LayerAndName{4, "s"}));
  EXPECT_TRUE(handedOut.front().second.is_same(popped));
  EXPECT_TRUE(skips.takeHandedOut().empty());
}

}  // namespace
}  // namespace pipeprof::layer_profiling
