// Tests for PipeStreams on the CPU: boundaries between CPU partitions copy nothing and wait for nothing.
#include "threaded/streams.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

TEST(PipeStreams, CpuBoundariesHandTheSameTensorsOverWithoutEvents) {
  const PipeStreams streams({torch::kCPU, torch::kCPU, torch::kCPU});
  const torch::Tensor activation = torch::randn({4, 8});
  EXPECT_EQ(streams.markReady(0), nullptr);
  for (CopyDirection direction : {CopyDirection::Forward, CopyDirection::Backward}) {
    Handover moved = streams.transfer({{activation, torch::Tensor()}, streams.markReady(0)}, 0, 2, direction);
    EXPECT_EQ(moved.ready, nullptr);
    ASSERT_EQ(moved.tensors.size(), 2U);
    EXPECT_TRUE(moved.tensors[0].is_same(activation));  // not a copy
    EXPECT_FALSE(moved.tensors[1].defined());
    Tensors accepted = streams.accept(std::move(moved), 2);
    EXPECT_TRUE(accepted[0].is_same(activation));
  }
  streams.fork();
  streams.join();
  const PipeStreams::ComputeScope scope(streams, 1);  // no stream to make current: nothing happens
}

}  // namespace
}  // namespace pipeprof
