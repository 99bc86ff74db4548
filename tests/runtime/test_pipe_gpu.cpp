// CUDA tests of the Pipe (label gpu): they skip themselves when no CUDA device is present.
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

using testing::linearTanh;

#define PIPEPROF_REQUIRE_CUDA()                                        \
  if (!torch::cuda::is_available()) {                                  \
    GTEST_SKIP() << "no CUDA device: the CUDA tests of the Pipe skip"; \
  }

TEST(PipeGpu, ForwardOnCudaEqualsTheCpuSequential) {
  PIPEPROF_REQUIRE_CUDA();
  torch::nn::Sequential reference = linearTanh(4, 1);
  const torch::Tensor input = torch::randn({6, 8});
  torch::NoGradGuard noGrad;
  const torch::Tensor expected = reference->forward(input);
  const torch::Device cuda(torch::kCUDA, 0);
  // Two partitions sharing one device, each with its own worker.
  Pipe pipe(linearTanh(4, 1), {2, 2}, PipeOptions{{cuda, cuda}, 3, Checkpoint::ExceptLast, false});
  const torch::Tensor output = pipe.forward(input.to(cuda));
  EXPECT_TRUE(output.is_cuda());
  EXPECT_TRUE(torch::allclose(output.cpu(), expected, 1e-5, 1e-6));
}

TEST(PipeGpu, ParametersMoveToTheirPartitionsDevice) {
  PIPEPROF_REQUIRE_CUDA();
  Pipe pipe(linearTanh(4, 1), {1, 3}, PipeOptions{{torch::kCPU, torch::Device(torch::kCUDA, 0)}, 2,
                                                  Checkpoint::Never, false});
  auto parameters = pipe.parameters();
  EXPECT_TRUE(parameters[0].is_cpu());
  EXPECT_TRUE(parameters[2].is_cuda());
  torch::NoGradGuard noGrad;
  EXPECT_TRUE(pipe.forward(torch::randn({4, 8})).is_cuda());
}

TEST(PipeGpu, PeakBytesReadTheCachingAllocator) {
  PIPEPROF_REQUIRE_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  Pipe pipe(linearTanh(2, 1, 256), {1, 1}, PipeOptions{{cuda, cuda}, 2, Checkpoint::Never, false});
  torch::NoGradGuard noGrad;
  pipe.forward(torch::randn({64, 256}, cuda));
  for (Bytes peak : pipe.peakBytes()) {
    EXPECT_GE(peak, 256 * 256 * 4);  // at least the weight of the first Linear
  }
}

}  // namespace
}  // namespace pipeprof
