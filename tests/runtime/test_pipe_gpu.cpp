// CUDA tests of the Pipe and of a CUDA rank (label gpu): they skip themselves when no CUDA
// device is present.
#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/skip.h>
#include <pipeprof/simulator/simulator.h>

#include "cuda_test_util.h"
#include "pipe_test_util.h"
#include "rank_world.h"
#include "skip_test_layers.h"
#include "threaded/streams.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace pipeprof {
namespace {

using test::dropoutModel;
using test::linearTanh;
using test::pipeOptions;
using test::PopAdd;
using test::Stash;
using test::text;

using test::kCuda0;

/// Device lists for two partitions: one CUDA device twice (two workers, two compute streams,
/// no copy), CPU then CUDA, and two CUDA devices when there are two (copy streams).
std::vector<std::vector<torch::Device>> twoPartitionDevices() {
  std::vector<std::vector<torch::Device>> lists{{kCuda0, kCuda0}, {torch::kCPU, kCuda0}};
  if (torch::cuda::device_count() >= 2) {
    lists.push_back({kCuda0, torch::Device(torch::kCUDA, 1)});
  }
  return lists;
}

std::string text(const std::vector<torch::Device>& devices) {
  std::string out;
  for (const auto& device : devices) {
    out += (out.empty() ? "" : ",") + device.str();
  }
  return out;
}

/// Compared on the CPU; a little looser than the CPU tests (cuBLAS sums in another order
/// when the batch is split).
bool closeOnCpu(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.defined() != b.defined()) {
    return false;
  }
  return !a.defined() || (a.sizes() == b.sizes() && torch::allclose(a.cpu(), b.cpu(), 1e-4, 1e-5));
}

struct Run {
  torch::Tensor output;
  torch::Tensor inputGrad;
  std::vector<torch::Tensor> parameterGrads;
};

/// forward, MSE loss against `target`, backward: the output and every gradient.
template <typename Forward>
Run trainStep(Forward&& forward, const std::vector<torch::Tensor>& parameters, const torch::Tensor& input,
              const torch::Tensor& target) {
  torch::Tensor leaf = input.clone().requires_grad_(true);
  Run run;
  run.output = forward(leaf);
  torch::mse_loss(run.output, target.to(run.output.device())).backward();
  run.inputGrad = leaf.grad();
  for (const auto& parameter : parameters) {
    run.parameterGrads.push_back(parameter.grad());
  }
  return run;
}

/// The Pipe equals the unpartitioned model on cuda:0 (output, input and parameter gradients)
/// on every device list, chunks 1 and 4 and every checkpoint mode. A backward that deadlocks
/// (a blocking node on cuda:0's autograd thread) hangs here.
void expectEqualsTheUnpartitionedModel(const std::function<torch::nn::Sequential()>& build,
                                       const std::vector<std::int64_t>& balance,
                                       const std::vector<std::vector<torch::Device>>& deviceLists) {
  torch::manual_seed(3);
  const torch::Tensor input = torch::randn({8, 8});
  const torch::Tensor target = torch::randn({8, 8});
  torch::nn::Sequential reference = build();
  reference->to(kCuda0);
  const Run expected = trainStep([&](const torch::Tensor& x) { return reference->forward(x); }, reference->parameters(),
                                 input.to(kCuda0), target);
  for (const auto& devices : deviceLists) {
    for (std::int64_t chunks : {1, 4}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE("devices " + text(devices) + " balance " + text(balance) + " chunks " + std::to_string(chunks) +
                     " mode " + std::string(checkpointName(mode)));
        Pipe pipe(build(), balance, pipeOptions(devices, chunks, mode, false));
        const Run actual = trainStep([&](const torch::Tensor& x) { return pipe.forward(x); }, pipe.parameters(),
                                     input.to(devices.front()), target);
        ASSERT_EQ(actual.output.device(), devices.back());
        ASSERT_TRUE(closeOnCpu(actual.output, expected.output));
        ASSERT_EQ(actual.inputGrad.device(), devices.front());
        ASSERT_TRUE(closeOnCpu(actual.inputGrad, expected.inputGrad));
        ASSERT_EQ(actual.parameterGrads.size(), expected.parameterGrads.size());
        for (std::size_t k = 0; k < actual.parameterGrads.size(); ++k) {
          ASSERT_TRUE(closeOnCpu(actual.parameterGrads[k], expected.parameterGrads[k])) << "parameter " << k;
        }
      }
    }
  }
}

TEST(PipeGpu, ForwardOnCudaEqualsTheCpuSequential) {
  PIPEPROF_REQUIRE_CUDA();
  torch::nn::Sequential reference = linearTanh(4, 1);
  const torch::Tensor input = torch::randn({6, 8});
  torch::NoGradGuard noGrad;
  const torch::Tensor expected = reference->forward(input);
  // Two partitions sharing one device, each with its own worker.
  Pipe pipe(linearTanh(4, 1), {2, 2}, pipeOptions({kCuda0, kCuda0}, 3, Checkpoint::ExceptLast, false));
  const torch::Tensor output = pipe.forward(input.to(kCuda0));
  EXPECT_TRUE(output.is_cuda());
  EXPECT_TRUE(torch::allclose(output.cpu(), expected, 1e-5, 1e-6));
}

TEST(PipeGpu, NoDevicesNamedMeansEveryCudaDevice) {
  PIPEPROF_REQUIRE_CUDA();
  const auto count = static_cast<std::int64_t>(torch::cuda::device_count());
  Pipe pipe(linearTanh(count, 1), std::vector<std::int64_t>(count, 1), PipeOptions{});
  ASSERT_EQ(pipe.devices().size(), static_cast<std::size_t>(count));
  for (std::int64_t d = 0; d < count; ++d) {
    EXPECT_EQ(pipe.devices()[d], torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(d)));
  }
}

TEST(PipeGpu, ParametersMoveToTheirPartitionsDevice) {
  PIPEPROF_REQUIRE_CUDA();
  Pipe pipe(linearTanh(4, 1), {1, 3}, pipeOptions({torch::kCPU, kCuda0}, 2, Checkpoint::Never, false));
  auto parameters = pipe.parameters();
  EXPECT_TRUE(parameters[0].is_cpu());
  EXPECT_TRUE(parameters[2].is_cuda());
  torch::NoGradGuard noGrad;
  EXPECT_TRUE(pipe.forward(torch::randn({4, 8})).is_cuda());
}

TEST(PipeGpu, PeakBytesCountEachPartitionsOwnBlocksWhenTheyShareADevice) {
  PIPEPROF_REQUIRE_CUDA();
  // fc0 holds 16 MiB of weights (and 16 MiB of gradients after backward); fc1 holds 16 KiB.
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(2048, 2048));
  model->push_back("fc1", torch::nn::Linear(2048, 2));
  Pipe pipe(model, {1, 1}, pipeOptions({kCuda0, kCuda0}, 2, Checkpoint::Never, false));
  constexpr Bytes kMiB = 1 << 20;
  for (int step = 0; step < 2; ++step) {  // the second step starts with gradients and workspaces live
    pipe.forward(torch::randn({64, 2048}, kCuda0)).sum().backward();
    const std::vector<Bytes> peaks = pipe.peakBytes();
    ASSERT_EQ(peaks.size(), 2U);
    EXPECT_GE(peaks[0], 32 * kMiB) << "step " << step;             // weights and their gradients
    EXPECT_GE(peaks[1], 2048 * 2 * 4 * 2) << "step " << step;      // fc1's weights and gradients
    EXPECT_GT(peaks[0], peaks[1] + 24 * kMiB) << "step " << step;  // not one device-wide figure
    // The device-wide figure holds both partitions.
    const std::vector<std::optional<Bytes>> devicePeaks = pipe.devicePeakBytes();
    ASSERT_TRUE(devicePeaks[0].has_value());
    EXPECT_EQ(devicePeaks[0], devicePeaks[1]);
    EXPECT_GE(*devicePeaks[0], 32 * kMiB + 2048 * 2 * 4 * 2) << "step " << step;
  }
}

// A profile measured on CUDA predicts each partition's measured peak to 10%: the two library
// workspaces of each partition (its worker's and the autograd thread's, on its stream) and the
// caching allocator's blocks are in both.
TEST(PipeGpu, ACudaProfilePredictsEachPartitionsPeak) {
  PIPEPROF_REQUIRE_CUDA();
  Model model = test::twoWideLinears();
  const torch::nn::Sequential sequential = model.sequential;
  LayerProfilerOptions profiling;
  profiling.device = kCuda0;
  profiling.microBatches = {32};
  profiling.warmupRuns = 1;
  profiling.minRuns = 1;
  profiling.timeBudgetSeconds = 0.0;
  const Profile profile = profileModel(model, profiling);
  ASSERT_GT(profile.libraryWorkspaceBytes, 0);

  constexpr std::int64_t kBatch = 64;
  constexpr std::int64_t kChunks = 2;
  Candidate candidate;
  candidate.balance = {2, 2};
  candidate.chunks = kChunks;
  candidate.checkpoint = Checkpoint::Never;
  candidate.batch = kBatch;
  candidate.devices = {0, 0};
  const Prediction predicted =
      simulate(profile, Cluster::uniform(1, std::nullopt, 0.0, 0, "cuda:"), candidate).prediction;

  // What earlier tests' threads left on the pool streams is not this Pipe's.
  clearLibraryWorkspaces({kCuda0});
  Pipe pipe(sequential, {2, 2}, pipeOptions({kCuda0, kCuda0}, kChunks, Checkpoint::Never, false));
  const Batch batch = model.makeBatch(kBatch, 0);
  for (int step = 0; step < 2; ++step) {  // the second step starts with gradients and workspaces live
    for (torch::Tensor& parameter : sequential->parameters()) {
      if (parameter.grad().defined()) parameter.mutable_grad().zero_();  // in place, as the sweep does
    }
    model.loss(pipe.forward(batch.input.to(kCuda0)), batch.target.to(kCuda0)).backward();
  }
  const std::vector<Bytes> measured = pipe.peakBytes();
  ASSERT_EQ(measured.size(), 2U);
  ASSERT_EQ(predicted.peakBytes.size(), 2U);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_NEAR(static_cast<double>(predicted.peakBytes[j]), static_cast<double>(measured[j]),
                0.1 * static_cast<double>(measured[j]))
        << "partition " << j << ", library workspace " << profile.libraryWorkspaceBytes;
    EXPECT_GT(measured[j], 2 * profile.libraryWorkspaceBytes) << "partition " << j;
  }
  clearLibraryWorkspaces({kCuda0});
}

TEST(PipeGpu, TwoPartitionsEqualTheUnpartitionedModelInEveryModeAndChunks) {
  PIPEPROF_REQUIRE_CUDA();
  expectEqualsTheUnpartitionedModel([] { return linearTanh(6, 9); }, {3, 3}, twoPartitionDevices());
}

TEST(PipeGpu, OnePartitionOnCudaEqualsTheUnpartitionedModel) {
  PIPEPROF_REQUIRE_CUDA();
  expectEqualsTheUnpartitionedModel([] { return linearTanh(6, 9); }, {6}, {{kCuda0}});
}

TEST(PipeGpu, TheBlockingBackwardNodeTakesACpuInputWhereverTheOutputsAre) {
  PIPEPROF_REQUIRE_CUDA();
  Pipe pipe(linearTanh(4, 1), {2, 2}, pipeOptions({kCuda0, kCuda0}, 2, Checkpoint::Never, false));
  const torch::Tensor output = pipe.forward(torch::randn({4, 8}, kCuda0));
  ASSERT_EQ(output.grad_fn()->name(), "pipeprof::PipeGradientHandoff");
  EXPECT_TRUE(output.grad_fn()->input_metadata(0).device().is_cuda());  // runs on cuda:0's thread
  const auto& backward = output.grad_fn()->next_edge(0).function;
  ASSERT_EQ(backward->name(), "pipeprof::PipeBackward");
  EXPECT_TRUE(backward->input_metadata(0).device().is_cpu());  // runs on the caller's thread
}

TEST(PipeGpu, DropoutReplaysOnCudaSoCheckpointingKeepsTheGradients) {
  PIPEPROF_REQUIRE_CUDA();
  for (const auto& devices : twoPartitionDevices()) {
    SCOPED_TRACE("devices " + text(devices));
    std::vector<std::vector<torch::Tensor>> grads;
    std::vector<torch::Tensor> outputs;
    for (Checkpoint mode : {Checkpoint::Never, Checkpoint::Always, Checkpoint::ExceptLast}) {
      Pipe pipe(dropoutModel(), {2, 2}, pipeOptions(devices, 3, mode, false));
      torch::manual_seed(99);  // the step's base seed comes from the CPU generator
      torch::Tensor output = pipe.forward(torch::ones({6, 16}, devices.front()));
      output.sum().backward();
      outputs.push_back(output.detach().cpu());
      grads.emplace_back();
      for (const auto& parameter : pipe.parameters()) {
        grads.back().push_back(parameter.grad().cpu());
      }
    }
    EXPECT_GT((outputs[0] == 0).sum().item<std::int64_t>(), 0);  // dropout did drop
    for (std::size_t mode = 1; mode < grads.size(); ++mode) {
      EXPECT_TRUE(torch::equal(outputs[mode] == 0, outputs[0] == 0)) << "mode " << mode;  // the same masks
      EXPECT_TRUE(closeOnCpu(outputs[mode], outputs[0])) << "mode " << mode;
      for (std::size_t k = 0; k < grads[0].size(); ++k) {
        EXPECT_TRUE(closeOnCpu(grads[mode][k], grads[0][k])) << "mode " << mode << " parameter " << k;
      }
    }
  }
}

/// fc0, stash1, fc2, tanh3, fc4, pop5: the skip crosses from the first partition to the last.
torch::nn::Sequential skipModel() {
  torch::manual_seed(4);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(8, 8));
  model->push_back("stash1", Stash());
  model->push_back("fc2", torch::nn::Linear(8, 8));
  model->push_back("tanh3", torch::nn::Tanh());
  model->push_back("fc4", torch::nn::Linear(8, 8));
  model->push_back("pop5", PopAdd());
  return model;
}

TEST(PipeGpu, SkipConnectionsCrossCudaPartitions) {
  PIPEPROF_REQUIRE_CUDA();
  expectEqualsTheUnpartitionedModel(skipModel, {2, 4}, twoPartitionDevices());
  std::vector<std::vector<torch::Device>> threePartitions{{kCuda0, kCuda0, kCuda0}};
  if (torch::cuda::device_count() >= 2) {
    const torch::Device cuda1(torch::kCUDA, 1);
    threePartitions.push_back({kCuda0, cuda1, kCuda0});  // the skip passes partition 1's device by
  }
  expectEqualsTheUnpartitionedModel(skipModel, {2, 2, 2}, threePartitions);
}

TEST(PipeGpu, StreamsComputeOffTheDefaultStreamAndCopyAcrossDevices) {
  PIPEPROF_REQUIRE_CUDA();
  const torch::Device last = torch::cuda::device_count() >= 2 ? torch::Device(torch::kCUDA, 1) : kCuda0;
  const PipeStreams streams({torch::kCPU, kCuda0, last});
  const c10::impl::VirtualGuardImpl cuda(torch::kCUDA);
  const torch::Tensor x = torch::randn({64, 64});

  Handover up = streams.transfer({{x}, streams.markReady(0)}, 0, 1, CopyDirection::Forward);
  EXPECT_NE(up.ready, nullptr);  // the compute stream waits for the copy stream
  torch::Tensor onCuda;
  ReadyEvent computed;
  {
    const PipeStreams::ComputeScope scope(streams, 1);
    EXPECT_NE(cuda.getStream(kCuda0), cuda.getDefaultStream(kCuda0));
    onCuda = streams.accept(std::move(up), 1).front() * 3;
    computed = streams.markReady(1);
  }
  EXPECT_EQ(cuda.getStream(kCuda0), cuda.getDefaultStream(kCuda0));
  Handover across = streams.transfer({{onCuda}, computed}, 1, 2, CopyDirection::Forward);
  EXPECT_EQ(across.tensors.front().device(), last);
  Handover down = streams.transfer(std::move(across), 2, 0, CopyDirection::Backward);
  EXPECT_EQ(down.ready, nullptr);  // a copy to the CPU is synchronous
  EXPECT_TRUE(torch::equal(down.tensors.front(), x * 3));
}

TEST(PipeGpu, WorkBetweenStepsRunsOnTheDevicesComputeStreamInTheThreadsOrder) {
  PIPEPROF_REQUIRE_CUDA();
  const PipeStreams streams({kCuda0, kCuda0});
  const c10::impl::VirtualGuardImpl cuda(torch::kCUDA);
  const c10::Stream before = cuda.getStream(kCuda0);
  const torch::Tensor x = torch::ones({1024}, kCuda0);
  torch::Tensor y;
  {
    const PipeStreams::InOrderComputeScope scope(streams, 1);
    EXPECT_NE(cuda.getStream(kCuda0), before) << "the optimizer's blocks would count against no device";
    y = x * 2;  // after the caller's stream's work
  }
  EXPECT_EQ(cuda.getStream(kCuda0), before);
  EXPECT_EQ((y + x).sum().item<float>(), 3 * 1024) << "the caller's stream waited for the scope's work";
}

// A CUDA rank's peak counts what a Pipe's device counts: the parameters, gradients and AdamW's
// two moments of its 8 MiB of weights at least (its CUDA blocks, on the stream its ops run on);
// the caching allocator's peak on the device holds them too.
TEST(RankGpu, ACudaRanksPeakHoldsItsParametersGradientsAndOptimizerState) {
  PIPEPROF_REQUIRE_CUDA();
  TrainingOptions options;
  options.balance = {4};
  options.chunks = 2;
  options.devices = {kCuda0};
  options.batch = 64;
  options.warmupSteps = 1;
  options.steps = 1;
  options.optimizer.kind = OptimizerKind::AdamW;
  RankTrainingResult result;
  const std::string failures = test::joined(test::runRanks(1, [&](int, Transport& transport) {
    Model model = test::twoWideLinears();
    result = trainRank(model, options, transport);
  }));
  ASSERT_EQ(failures, "");
  constexpr Bytes kWeights = 2 * (1024 * 1024 + 1024) * 4;
  EXPECT_GE(result.peakBytes, 4 * kWeights) << "parameters, gradients, two moments";
  ASSERT_TRUE(result.devicePeakBytes.has_value());
  EXPECT_GE(*result.devicePeakBytes, 4 * kWeights);
}

}  // namespace
}  // namespace pipeprof
