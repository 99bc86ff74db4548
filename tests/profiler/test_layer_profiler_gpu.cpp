// With CUDA: the layer profiler times and measures memory on cuda:0 at several sizes, measures the
// library workspace, and leaves the model as it was.
#include <pipeprof/runtime/layer_profiler.h>

#include <gtest/gtest.h>

#include <torch/torch.h>

namespace pipeprof {
namespace {

TEST(LayerProfilerGpu, ProfilesOnCudaAtSeveralSizesAndLeavesTheModelOnItsDevice) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: profiling on CUDA needs one";
  torch::manual_seed(1);
  torch::nn::Sequential sequential;
  sequential->push_back("fc0", torch::nn::Linear(32, 64));
  sequential->push_back("relu1", torch::nn::ReLU());
  sequential->push_back("fc2", torch::nn::Linear(64, 8));
  Model model;
  model.name = "test";
  model.sequential = sequential;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    torch::manual_seed(static_cast<std::uint64_t>(seed));
    return Batch{torch::randn({batch, 32}), torch::randn({batch, 8})};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  std::vector<torch::Tensor> before;
  for (const auto& p : sequential->parameters()) before.push_back(p.detach().clone());
  // A gradient from earlier training: the CPU memory pass and the CUDA timing pass must not mix
  // it up with theirs, and it must come back unchanged.
  sequential->parameters()[0].mutable_grad() = torch::full({64, 32}, 2.0);

  LayerProfilerOptions options;
  options.device = torch::Device(torch::kCUDA, 0);
  options.microBatches = {4, 16};
  options.warmupRuns = 1;
  options.minRuns = 3;
  options.timeBudgetSeconds = 0.0;
  const Profile profile = profileModel(model, options);

  EXPECT_EQ(profile.environment.deviceType, "cuda");
  ASSERT_EQ(profile.layerCount(), 3);
  for (const LayerProfile& layer : profile.layers) {
    ASSERT_EQ(layer.costs.size(), 2U) << layer.name;
    for (const CostSample& cost : layer.costs) {
      EXPECT_GT(cost.forwardNs, 0) << layer.name;
      EXPECT_GT(cost.outputBytes, 0) << layer.name;
    }
  }
  // The launch data of every pass (CUPTI's cheap mode; a profile without CUPTI has none): the
  // host's launch time, and the kernels the device ran: every layer here launches at least
  // one kernel each way.
  if (profile.hasLaunchData()) {
    for (const LayerProfile& layer : profile.layers) {
      for (const CostSample& cost : layer.costs) {
        ASSERT_TRUE(cost.forwardLaunch && cost.backwardLaunch) << layer.name;
        EXPECT_GT(cost.forwardLaunch->hostNs, 0) << layer.name;
        EXPECT_LE(cost.forwardLaunch->hostNs, cost.forwardNs) << layer.name;  // part of the same passes
        EXPECT_GE(cost.forwardLaunch->kernels, 1) << layer.name;
        EXPECT_GE(cost.backwardLaunch->kernels, 1) << layer.name;
        EXPECT_GT(cost.backwardLaunch->deviceNs, 0) << layer.name;
      }
    }
  } else {
    ADD_FAILURE() << "no launch data: CUPTI could not record on this machine";
  }
  const auto after = sequential->parameters();
  for (std::size_t k = 0; k < after.size(); ++k) {
    EXPECT_TRUE(after[k].is_cpu()) << "parameter " << k;
    EXPECT_TRUE(torch::equal(after[k], before[k])) << "parameter " << k;
  }
  ASSERT_TRUE(after[0].grad().defined());
  EXPECT_TRUE(after[0].grad().is_cpu());
  EXPECT_TRUE(torch::equal(after[0].grad(), torch::full({64, 32}, 2.0)));
}

// Memory is measured on the device through the caching allocator: every figure is made of its
// blocks (multiples of 512 bytes), dropout keeps its CUDA mask, and the library workspace a
// (thread, stream) pair keeps after a matrix multiplication is recorded.
TEST(LayerProfilerGpu, MeasuresMemoryOnTheDeviceAndTheLibraryWorkspace) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: profiling on CUDA needs one";
  torch::manual_seed(1);
  torch::nn::Sequential sequential;
  sequential->push_back("fc0", torch::nn::Linear(100, 300));
  sequential->push_back("drop1", torch::nn::Dropout(0.5));
  sequential->push_back("fc2", torch::nn::Linear(300, 10));
  Model model;
  model.name = "test";
  model.sequential = sequential;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    torch::manual_seed(static_cast<std::uint64_t>(seed));
    return Batch{torch::randn({batch, 100}), torch::randn({batch, 10})};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  LayerProfilerOptions options;
  options.device = torch::Device(torch::kCUDA, 0);
  options.microBatches = {3, 8};
  options.warmupRuns = 1;
  options.minRuns = 1;
  options.timeBudgetSeconds = 0.0;
  const Profile profile = profileModel(model, options);

  EXPECT_TRUE(profile.onCuda());
  // LibTorch 2.x: at least cuBLAS's workspace (4 MiB before Hopper, 32 MiB on it), not a model's worth.
  EXPECT_GE(profile.libraryWorkspaceBytes, 1 << 20);
  EXPECT_LE(profile.libraryWorkspaceBytes, Bytes{1} << 30);
  EXPECT_EQ(profile.layers[0].paramBytes, 120320 + 1536);  // weight 120000 B, bias 1200 B: their blocks
  for (const LayerProfile& layer : profile.layers) {
    EXPECT_EQ(layer.paramBytes % 512, 0) << layer.name;
    for (const CostSample& cost : layer.costs) {
      EXPECT_EQ(cost.savedBytes % 512, 0) << layer.name << " at " << cost.microBatch;
      EXPECT_EQ(cost.forwardWorkspaceBytes % 512, 0) << layer.name << " at " << cost.microBatch;
      EXPECT_EQ(cost.backwardWorkspaceBytes % 512, 0) << layer.name << " at " << cost.microBatch;
      // The output is the tensor's own bytes (a copy moves those); the simulator rounds it.
      EXPECT_EQ(cost.outputBytes, cost.microBatch * (layer.name == "fc2" ? 10 : 300) * 4) << layer.name;
    }
  }
  // Dropout keeps a mask on CUDA (one byte per element, a block at least): not nothing, and not
  // the workspace either (no layer's figures hold the workspace: it exists before they start).
  const CostSample& dropout = profile.layers[1].costs[1];
  EXPECT_GE(dropout.savedBytes, 8 * 300);
  EXPECT_LT(dropout.savedBytes, profile.libraryWorkspaceBytes);
  for (const LayerProfile& layer : profile.layers) {
    EXPECT_LT(layer.costs[1].savedBytes, profile.libraryWorkspaceBytes) << layer.name;
  }
}

}  // namespace
}  // namespace pipeprof
