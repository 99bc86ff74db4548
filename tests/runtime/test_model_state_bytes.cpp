// The model state a device holds between steps -- parameters, gradients, the optimizer's state --
// measured by the runtime after the second step equals the simulator's figure to the byte, for
// every optimizer and precision.
#include "make_optimizer.h"

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/simulator.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

constexpr std::int64_t kBatch = 8;

/// A convolution block and a classifier: weights of both kinds autocast casts.
Model smallModel() {
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

/// What each pipeline device holds after `steps` training steps of the threaded Pipe: its
/// stages' parameters plus what its worker keeps allocated (gradients, optimizer state).
std::vector<Bytes> measuredModelState(Model& model, const PipelineShape& shape, const OptimizerSpec& optimizer,
                                      Precision precision, int steps) {
  PipeOptions options;
  static_cast<PipelineShape&>(options) = shape;
  options.devices = {torch::kCPU, torch::kCPU};
  options.precision = precision;
  Pipe pipe(model.sequential, options);
  const std::vector<std::vector<torch::Tensor>> parameters = pipe.deviceParameters();
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  for (const auto& own : parameters) optimizers.push_back(makeOptimizer(optimizer, own));
  const Batch batch = model.makeBatch(kBatch, 1);
  for (int s = 0; s < steps; ++s) {
    for (const auto& own : parameters) {
      for (const torch::Tensor& p : own) {
        if (p.grad().defined()) p.grad().zero_();
      }
    }
    pipe.step(batch.input, batch.target, model.loss);
    pipe.onEachDevice([&](std::int64_t d) { optimizers[static_cast<std::size_t>(d)]->step(); });
  }
  std::vector<Bytes> held;
  for (std::size_t d = 0; d < parameters.size(); ++d) {
    Bytes parameterBytes = 0;
    for (const torch::Tensor& p : parameters[d]) parameterBytes += static_cast<Bytes>(p.numel() * p.element_size());
    held.push_back(parameterBytes + liveBytes(static_cast<std::int64_t>(d)));
  }
  return held;
}

/// The layer profiler at one micro-batch size, one run: enough for the model state.
LayerProfilerOptions quickProfiling(const OptimizerSpec& optimizer, Precision precision) {
  LayerProfilerOptions options;
  options.microBatches = {kBatch / 2};
  options.warmupRuns = 0;
  options.minRuns = 1;
  options.timeBudgetSeconds = 0;
  options.optimizer = optimizer;
  options.precision = precision;
  return options;
}

TEST(ModelStateBytes, TheRuntimeHoldsWhatTheSimulatorChargesAfterTheSecondStep) {
  PipelineShape shape;
  shape.balance = {3, 4};
  shape.chunks = 2;
  shape.schedule = ScheduleKind::OneFOneB;
  shape.checkpoint = Checkpoint::ExceptLast;
  for (OptimizerKind kind : kOptimizerKinds) {
    for (Precision precision : {Precision::Fp32, Precision::Bf16}) {
      OptimizerSpec optimizer;
      optimizer.kind = kind;
      optimizer.weightDecay = 0.01;  // the SGDs' decay allocates a temporary; the state is the same
      const std::string what = std::string(optimizerName(kind)) + ", " + std::string(precisionName(precision));
      Model profiled = smallModel();
      const Profile profile = profileModel(profiled, quickProfiling(optimizer, precision));
      Candidate candidate;
      static_cast<PipelineShape&>(candidate) = shape;
      candidate.batch = kBatch;
      const std::vector<Bytes> predicted = modelStateBytes(profile, candidate);

      Model trained = smallModel();
      const std::vector<Bytes> measured = measuredModelState(trained, shape, optimizer, precision, 2);
      ASSERT_EQ(measured.size(), predicted.size()) << what;
      for (std::size_t d = 0; d < measured.size(); ++d)
        EXPECT_EQ(measured[d], predicted[d]) << what << ", device " << d;
    }
  }
}

TEST(ModelStateBytes, ATiedEmbeddingIsOneCopyPerDeviceThatHoldsIt) {
  ModelOptions options;
  options.width = 32;
  options.depth = 1;  // embed block0 norm head
  options.tieEmbeddings = true;
  OptimizerSpec optimizer;
  optimizer.kind = OptimizerKind::AdamW;
  Model profiled = buildModel("gpt", options);
  const Profile profile = profileModel(profiled, quickProfiling(optimizer, Precision::Fp32));
  // Two devices: the head's holds a replica. One device: both layers hold the one tensor.
  for (const std::vector<std::int64_t>& balance : {std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{4}}) {
    PipelineShape shape;
    shape.balance = balance;
    shape.chunks = 2;
    shape.schedule = ScheduleKind::OneFOneB;
    Candidate candidate;
    static_cast<PipelineShape&>(candidate) = shape;
    candidate.batch = kBatch;
    const std::vector<Bytes> predicted = modelStateBytes(profile, candidate);
    Model trained = buildModel("gpt", options);
    const std::vector<Bytes> measured = measuredModelState(trained, shape, optimizer, Precision::Fp32, 2);
    ASSERT_EQ(measured.size(), predicted.size());
    for (std::size_t d = 0; d < measured.size(); ++d) {
      EXPECT_EQ(measured[d], predicted[d]) << "balance of " << balance.size() << " stages, device " << d;
    }
  }
}

}  // namespace
}  // namespace pipeprof
