// Shared by the model-state tests on CPU and on CUDA: what the runtime holds between steps,
// measured, and a layer profile just detailed enough to predict it.
#pragma once

#include "training/make_optimizer.h"

#include <pipeprof/core/allocator_rounding.h>
#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/simulator.h>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof::test {

/// A convolution block and a classifier: weights of both kinds autocast casts.
inline Model convAndLinearModel() {
  torch::manual_seed(0);
  torch::nn::Sequential seq;
  seq->push_back("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
  seq->push_back("bn", torch::nn::BatchNorm2d(8));
  seq->push_back("relu", torch::nn::ReLU());
  seq->push_back("flatten", torch::nn::Flatten());
  seq->push_back("fc1", torch::nn::Linear(8 * 6 * 6, 32));
  seq->push_back("tanh", torch::nn::Tanh());
  seq->push_back("fc2", torch::nn::Linear(32, 10));
  Model model;
  model.name = "small";
  model.sequential = seq;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
    return Batch{torch::randn({batch, 3, 6, 6}, generator), torch::randn({batch, 10}, generator)};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output.to(torch::kFloat), target);
  };
  return model;
}

/// What each pipeline device holds after `steps` training steps of the threaded Pipe on
/// `devices` (batch `batch`): its stages' parameters (on CUDA, the caching allocator's block of
/// each) plus what its worker keeps allocated (gradients, optimizer state; on CUDA once the
/// library workspaces are freed).
inline std::vector<Bytes> measuredModelState(Model& model, const PipelineShape& shape,
                                             const std::vector<torch::Device>& devices, const OptimizerSpec& optimizer,
                                             Precision precision, std::int64_t batch, int steps) {
  PipeOptions options;
  static_cast<PipelineShape&>(options) = shape;
  options.devices = devices;
  options.precision = precision;
  Pipe pipe(model.sequential, options);
  const std::vector<std::vector<torch::Tensor>> parameters = pipe.deviceParameters();
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  for (const auto& own : parameters) optimizers.push_back(makeOptimizer(optimizer, own));
  const Batch data = model.makeBatch(batch, 1);
  const torch::Tensor input = data.input.to(pipe.devices().front());
  for (int s = 0; s < steps; ++s) {
    for (const auto& own : parameters) {
      for (const torch::Tensor& p : own) {
        if (p.grad().defined()) p.grad().zero_();
      }
    }
    pipe.step(input, data.target, model.loss);
    pipe.onEachDevice([&](std::int64_t d) { optimizers[static_cast<std::size_t>(d)]->step(); });
  }
  clearLibraryWorkspaces(devices);  // on CUDA the workers' cuBLAS workspaces count against them too
  std::vector<Bytes> held;
  for (std::size_t d = 0; d < parameters.size(); ++d) {
    Bytes parameterBytes = 0;
    for (const torch::Tensor& p : parameters[d]) {
      const auto bytes = static_cast<Bytes>(p.numel() * p.element_size());
      parameterBytes += p.is_cuda() ? roundToAllocatorBlock(bytes) : bytes;
    }
    held.push_back(parameterBytes + liveBytes(static_cast<std::int64_t>(d)));
  }
  return held;
}

/// The layer profiler on `device` at one micro-batch size, one run: enough for the model state.
inline LayerProfilerOptions quickProfiling(const OptimizerSpec& optimizer, Precision precision, std::int64_t microBatch,
                                           torch::Device device = torch::kCPU) {
  LayerProfilerOptions options;
  options.device = device;
  options.microBatches = {microBatch};
  options.warmupRuns = 0;
  options.minRuns = 1;
  options.timeBudgetSeconds = 0;
  options.optimizer = optimizer;
  options.precision = precision;
  return options;
}

/// For every optimizer and each of `precisions`: the model state convAndLinearModel() holds on
/// each of `devices` (two, 1F1B over [3, 4], 2 micro-batches of 4) after its second step is what
/// the simulator charges from a layer profile taken on `profiled`, to the byte.
inline void expectTheModelStateThatIsPredicted(const std::vector<torch::Device>& devices, torch::Device profiled,
                                               const std::vector<Precision>& precisions) {
  constexpr std::int64_t kBatch = 8;
  PipelineShape shape;
  shape.balance = {3, 4};
  shape.chunks = 2;
  shape.schedule = ScheduleKind::OneFOneB;
  shape.checkpoint = Checkpoint::ExceptLast;
  for (OptimizerKind kind : kOptimizerKinds) {
    for (Precision precision : precisions) {
      OptimizerSpec optimizer;
      optimizer.kind = kind;
      optimizer.weightDecay = 0.01;  // the SGDs' decay allocates a temporary; the state is the same
      const std::string what = std::string(optimizerName(kind)) + ", " + std::string(precisionName(precision));
      Model profiledModel = convAndLinearModel();
      const Profile profile = profileModel(profiledModel, quickProfiling(optimizer, precision, kBatch / 2, profiled));
      Candidate candidate;
      static_cast<PipelineShape&>(candidate) = shape;
      candidate.batch = kBatch;
      const std::vector<Bytes> predicted = modelStateBytes(profile, candidate);

      Model trained = convAndLinearModel();
      const std::vector<Bytes> measured = measuredModelState(trained, shape, devices, optimizer, precision, kBatch, 2);
      ASSERT_EQ(measured.size(), predicted.size()) << what;
      for (std::size_t d = 0; d < measured.size(); ++d) {
        EXPECT_EQ(measured[d], predicted[d]) << what << ", device " << d;
      }
    }
  }
}

}  // namespace pipeprof::test
