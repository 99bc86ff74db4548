// CUDA tests of the training step (label gpu; they skip themselves without a CUDA device): under
// bf16 and fp16 autocast on cuda:0 every schedule trains as the unpartitioned model does under
// the same autocast (fp16 with its loss scaling), with fp32 weights and gradients; the model
// state held after the second step is the simulator's figure to the byte for every optimizer
// and precision; a CUDA profile taken under fp16 and AdamW predicts each partition's peak.
#include "model_state_measure.h"
#include "precision_reference.h"

#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/simulator/simulator.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace pipeprof {
namespace {

using testing::adamwWithDecay;
using testing::convAndLinearModel;
using testing::expectSameFp32Gradients;
using testing::expectSameLosses;
using testing::measuredModelState;
using testing::quickProfiling;
using testing::referenceLosses;
using testing::referenceStep;
using testing::ReferenceTraining;
using testing::smallAutocastModel;

#define PIPEPROF_REQUIRE_CUDA()                                                 \
  if (!torch::cuda::is_available()) {                                           \
    GTEST_SKIP() << "no CUDA device: the CUDA tests of the training step skip"; \
  }

const torch::Device kCuda0(torch::kCUDA, 0);
const std::vector<torch::Device> kTwiceCuda0{kCuda0, kCuda0};

constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kChunks = 4;
constexpr std::int64_t kDataSeed = 5;
constexpr std::int64_t kSteps = 3;
/// cuBLAS may pick another kernel on a partition's stream than on the default one, summing in
/// another order: looser than the CPU's 1e-6, and still under a third of what the last step's
/// loss moves in the wrong precision (ReducedPrecisionDiffersFromFp32OnCuda; fp16's moved 9e-5
/// of it on an H200).
constexpr double kRelative = 1e-5;

/// The unpartitioned model's training on cuda:0 under `precision` (fp16 with PyTorch's loss
/// scaling, as the training loop runs it).
ReferenceTraining onCuda(Precision precision) {
  ReferenceTraining reference;
  reference.device = kCuda0;
  reference.precision = precision;
  reference.batch = kBatch;
  reference.chunks = kChunks;
  reference.dataSeed = kDataSeed;
  reference.steps = kSteps;
  if (precision == Precision::Fp16) reference.gradScaler = GradScalerOptions{};
  return reference;
}

TrainingOptions trainingOnCuda(Precision precision, ScheduleKind schedule, std::vector<std::int64_t> balance,
                               std::int64_t stagesPerDevice, Checkpoint checkpoint) {
  TrainingOptions options;
  options.balance = std::move(balance);
  options.schedule = schedule;
  options.stagesPerDevice = stagesPerDevice;
  options.chunks = kChunks;
  options.checkpoint = checkpoint;
  options.devices = kTwiceCuda0;
  options.batch = kBatch;
  options.dataSeed = kDataSeed;
  options.warmupSteps = 1;
  options.steps = kSteps - 1;
  options.optimizer = adamwWithDecay();
  options.precision = precision;
  return options;
}

TEST(PrecisionGpu, ReducedPrecisionDiffersFromFp32OnCuda) {
  PIPEPROF_REQUIRE_CUDA();
  const std::vector<double> fp32 = referenceLosses(onCuda(Precision::Fp32), adamwWithDecay());
  for (Precision precision : {Precision::Bf16, Precision::Fp16}) {
    const std::vector<double> reduced = referenceLosses(onCuda(precision), adamwWithDecay());
    EXPECT_GT(std::abs(fp32.back() - reduced.back()), 3 * kRelative * std::abs(fp32.back()))
        << precisionName(precision);
  }
}

TEST(PrecisionGpu, EveryScheduleTrainsOnCudaAsTheUnpartitionedModelUnderBf16AndFp16) {
  PIPEPROF_REQUIRE_CUDA();
  struct Case {
    ScheduleKind schedule;
    std::vector<std::int64_t> balance;
    std::int64_t stagesPerDevice;
    Checkpoint checkpoint;
  };
  const std::vector<Case> cases = {{ScheduleKind::GPipe, {2, 3}, 1, Checkpoint::Never},
                                   {ScheduleKind::GPipe, {3, 2}, 1, Checkpoint::Always},
                                   {ScheduleKind::OneFOneB, {3, 2}, 1, Checkpoint::ExceptLast},
                                   {ScheduleKind::Interleaved, {1, 1, 2, 1}, 2, Checkpoint::ExceptLast},
                                   {ScheduleKind::ZeroBubble, {2, 3}, 1, Checkpoint::ExceptLast},
                                   {ScheduleKind::ZeroBubbleV, {1, 2, 1, 1}, 2, Checkpoint::Never}};
  for (Precision precision : {Precision::Bf16, Precision::Fp16}) {
    const std::vector<double> expected = referenceLosses(onCuda(precision), adamwWithDecay());
    for (const Case& c : cases) {
      const std::string what = std::string(precisionName(precision)) + " " + std::string(scheduleKindName(c.schedule)) +
                               " " + std::string(checkpointName(c.checkpoint));
      Model model = smallAutocastModel();
      try {
        const TrainingResult result =
            trainAndMeasure(model, trainingOnCuda(precision, c.schedule, c.balance, c.stagesPerDevice, c.checkpoint));
        expectSameLosses(result.losses, expected, what, kRelative);
      } catch (const std::exception& error) {
        ADD_FAILURE() << what << ": " << error.what();
      }
    }
  }
}

TEST(PrecisionGpu, Fp16GradientsOnCudaAreTheUnpartitionedModelsScaledInFp32) {
  PIPEPROF_REQUIRE_CUDA();
  constexpr double kScale = 65536.0;  // PyTorch's initial loss scale
  Model reference = smallAutocastModel();
  reference.sequential->to(kCuda0);
  const Batch batch = reference.makeBatch(kBatch, kDataSeed);
  referenceStep(reference, batch, onCuda(Precision::Fp16), kScale);

  Model model = smallAutocastModel();
  PipeOptions options;
  options.balance = {2, 3};
  options.chunks = kChunks;
  options.checkpoint = Checkpoint::ExceptLast;
  options.devices = kTwiceCuda0;
  options.precision = Precision::Fp16;
  Pipe pipe(model.sequential, options);
  pipe.step(batch.input.to(kCuda0), batch.target, model.loss, kScale);
  expectSameFp32Gradients(pipe.parameters(), reference.sequential->parameters(), kRelative);
}

TEST(PrecisionGpu, TheModelStateOnCudaIsWhatTheSimulatorChargesAfterTheSecondStep) {
  PIPEPROF_REQUIRE_CUDA();
  PipelineShape shape;
  shape.balance = {3, 4};
  shape.chunks = 2;
  shape.schedule = ScheduleKind::OneFOneB;
  shape.checkpoint = Checkpoint::ExceptLast;
  for (OptimizerKind kind : kOptimizerKinds) {
    for (Precision precision : {Precision::Fp32, Precision::Bf16, Precision::Fp16}) {
      OptimizerSpec optimizer;
      optimizer.kind = kind;
      optimizer.weightDecay = 0.01;
      const std::string what = std::string(optimizerName(kind)) + ", " + std::string(precisionName(precision));
      Model profiled = convAndLinearModel();
      const Profile profile = profileModel(profiled, quickProfiling(optimizer, precision, kBatch / 2, kCuda0));
      Candidate candidate;
      static_cast<PipelineShape&>(candidate) = shape;
      candidate.batch = kBatch;
      const std::vector<Bytes> predicted = modelStateBytes(profile, candidate);

      Model trained = convAndLinearModel();
      const std::vector<Bytes> measured =
          measuredModelState(trained, shape, kTwiceCuda0, optimizer, precision, kBatch, 2);
      ASSERT_EQ(measured.size(), predicted.size()) << what;
      for (std::size_t d = 0; d < measured.size(); ++d) {
        EXPECT_EQ(measured[d], predicted[d]) << what << ", device " << d;
      }
    }
  }
}

// Like PipeGpu.ACudaProfilePredictsEachPartitionsPeak, under fp16 autocast with AdamW: the cast
// copies, the optimizer's state and step, the loss scaling's unscale are in both.
TEST(PrecisionGpu, AnFp16AdamWProfilePredictsEachPartitionsPeakOnCuda) {
  PIPEPROF_REQUIRE_CUDA();
  const auto build = [] {
    torch::manual_seed(3);
    torch::nn::Sequential sequential;
    sequential->push_back("fc0", torch::nn::Linear(1024, 1024));
    sequential->push_back("relu1", torch::nn::ReLU());
    sequential->push_back("fc2", torch::nn::Linear(1024, 1024));
    sequential->push_back("relu3", torch::nn::ReLU());
    Model model;
    model.name = "test";
    model.sequential = sequential;
    model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
      at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
      return Batch{torch::randn({batch, 1024}, generator), torch::randn({batch, 1024}, generator)};
    };
    model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
      return torch::mse_loss(output.to(torch::kFloat), target);
    };
    return model;
  };
  OptimizerSpec optimizer = adamwWithDecay();
  LayerProfilerOptions profiling = quickProfiling(optimizer, Precision::Fp16, 32, kCuda0);
  profiling.warmupRuns = 1;
  Model profiled = build();
  const Profile profile = profileModel(profiled, profiling);

  TrainingOptions options = trainingOnCuda(Precision::Fp16, ScheduleKind::OneFOneB, {2, 2}, 1, Checkpoint::Never);
  options.batch = 64;
  options.chunks = 2;
  options.warmupSteps = 1;  // the measured step starts with the optimizer's state live
  options.steps = 2;
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = options;
  candidate.batch = options.batch;
  candidate.devices = {0, 0};
  SimulationOptions simulation;
  const Prediction predicted =
      simulate(profile, Cluster::uniform(1, std::nullopt, 0.0, 0, "cuda:"), candidate, simulation).prediction;

  clearLibraryWorkspaces({kCuda0});
  Model trained = build();
  const TrainingResult result = trainAndMeasure(trained, options);
  const std::vector<Bytes>& measured = result.measurement.peakBytes;
  ASSERT_EQ(measured.size(), 2U);
  ASSERT_EQ(predicted.peakBytes.size(), 2U);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_NEAR(static_cast<double>(predicted.peakBytes[j]), static_cast<double>(measured[j]),
                0.1 * static_cast<double>(measured[j]))
        << "partition " << j << ": predicted " << predicted.peakBytes[j] << ", measured " << measured[j];
  }
  clearLibraryWorkspaces({kCuda0});
}

}  // namespace
}  // namespace pipeprof
