// Tests for the training step's precision: under bf16 autocast every schedule, threaded and as
// ranks, computes what the unpartitioned model computes under the same autocast, with fp32
// weights and gradients; fp16 is refused on CPUs.
#include "precision_reference.h"

#include <pipeprof/core/optimizer.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/stage_runtime.h>
#include <pipeprof/runtime/training_loop.h>

#include "rank_world.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace pipeprof {
namespace {

using testing::adamwWithDecay;
using testing::expectSameFp32Gradients;
using testing::expectSameLosses;
using testing::referenceLosses;
using testing::referenceStep;
using testing::ReferenceTraining;
using testing::smallAutocastModel;

constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kChunks = 4;
constexpr std::int64_t kDataSeed = 5;
constexpr std::int64_t kSteps = 3;

/// The unpartitioned model's training on the CPU under `precision`, kChunks micro-batches a step.
ReferenceTraining onTheCpu(Precision precision) {
  ReferenceTraining reference;
  reference.precision = precision;
  reference.batch = kBatch;
  reference.chunks = kChunks;
  reference.dataSeed = kDataSeed;
  reference.steps = kSteps;
  return reference;
}

/// The losses of kSteps steps of the unpartitioned model under `precision` with AdamW.
std::vector<double> cpuReferenceLosses(Precision precision) {
  return referenceLosses(onTheCpu(precision), adamwWithDecay());
}

TrainingOptions trainingOptions(ScheduleKind schedule, std::vector<std::int64_t> balance, std::int64_t stagesPerDevice,
                                Checkpoint checkpoint) {
  TrainingOptions options;
  options.balance = std::move(balance);
  options.schedule = schedule;
  options.stagesPerDevice = stagesPerDevice;
  options.chunks = kChunks;
  options.checkpoint = checkpoint;
  options.devices = {torch::kCPU, torch::kCPU};
  options.batch = kBatch;
  options.dataSeed = kDataSeed;
  options.warmupSteps = 1;
  options.steps = kSteps - 1;
  options.optimizer = adamwWithDecay();
  options.precision = Precision::Bf16;
  return options;
}

TEST(Precision, Bf16DiffersFromFp32) {
  const std::vector<double> fp32 = cpuReferenceLosses(Precision::Fp32);
  const std::vector<double> bf16 = cpuReferenceLosses(Precision::Bf16);
  // bf16 keeps 8 bits of mantissa: the losses move in the third digit, not the seventh.
  EXPECT_GT(std::abs(fp32.front() - bf16.front()), 1e-5 * std::abs(fp32.front()));
}

TEST(Precision, EveryScheduleTrainsThreadedAsTheUnpartitionedModelUnderBf16) {
  const std::vector<double> expected = cpuReferenceLosses(Precision::Bf16);
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
  for (const Case& c : cases) {
    Model model = smallAutocastModel();
    const TrainingResult result =
        trainAndMeasure(model, trainingOptions(c.schedule, c.balance, c.stagesPerDevice, c.checkpoint));
    expectSameLosses(result.losses, expected,
                     std::string(scheduleKindName(c.schedule)) + " " + std::string(checkpointName(c.checkpoint)));
  }
}

TEST(Precision, TwoRanksTrainAsTheUnpartitionedModelUnderBf16) {
  const std::vector<double> expected = cpuReferenceLosses(Precision::Bf16);
  std::vector<Model> models{smallAutocastModel(), smallAutocastModel()};
  const TrainingOptions options = trainingOptions(ScheduleKind::OneFOneB, {2, 3}, 1, Checkpoint::ExceptLast);
  std::vector<RankTrainingResult> results(2);
  const std::string failures = testing::joined(testing::runRanks(2, [&](int r, Transport& transport) {
    results[static_cast<std::size_t>(r)] = trainRank(models[static_cast<std::size_t>(r)], options, transport);
  }));
  ASSERT_EQ(failures, "");
  expectSameLosses(results[1].losses, expected, "2 ranks");
}

TEST(Precision, ThreadedGradientsAreTheUnpartitionedModelsInFp32) {
  Model reference = smallAutocastModel();
  const Batch batch = reference.makeBatch(kBatch, kDataSeed);
  referenceStep(reference, batch, onTheCpu(Precision::Bf16));

  Model model = smallAutocastModel();
  PipeOptions options;
  options.balance = {2, 3};
  options.chunks = kChunks;
  options.checkpoint = Checkpoint::ExceptLast;
  options.devices = {torch::kCPU, torch::kCPU};
  options.precision = Precision::Bf16;
  Pipe pipe(model.sequential, options);
  pipe.step(batch.input, batch.target, model.loss);
  expectSameFp32Gradients(pipe.parameters(), reference.sequential->parameters());
}

TEST(Precision, RankGradientsAreTheUnpartitionedModelsInFp32) {
  Model reference = smallAutocastModel();
  const Batch batch = reference.makeBatch(kBatch, kDataSeed);
  referenceStep(reference, batch, onTheCpu(Precision::Bf16));
  const std::vector<torch::Tensor> expected = reference.sequential->parameters();

  std::vector<Model> models{smallAutocastModel(), smallAutocastModel()};
  std::vector<std::vector<torch::Tensor>> parameters(2);
  const std::string failures = testing::joined(testing::runRanks(2, [&](int r, Transport& transport) {
    StageOptions options;
    options.balance = {2, 3};
    options.chunks = kChunks;
    options.schedule = ScheduleKind::OneFOneB;
    options.precision = Precision::Bf16;
    Model& model = models[static_cast<std::size_t>(r)];
    StageRuntime runtime(model.sequential, options, transport);
    runtime.train(true);
    runtime.step(batch.input, batch.target, model.loss, runtime.stepSeed());
    parameters[static_cast<std::size_t>(r)] = runtime.parameters();
  }));
  ASSERT_EQ(failures, "");
  std::vector<torch::Tensor> actual = parameters[0];
  actual.insert(actual.end(), parameters[1].begin(), parameters[1].end());
  expectSameFp32Gradients(actual, expected);
}

TEST(Precision, TheCallersAutocastIsLeftAsItWas) {
  Model model = smallAutocastModel();
  const Batch batch = model.makeBatch(kBatch, kDataSeed);
  PipeOptions options;
  options.balance = {5};  // one device: its ops run on this thread
  options.chunks = kChunks;
  options.precision = Precision::Bf16;
  Pipe pipe(model.sequential, options);
  pipe.step(batch.input, batch.target, model.loss);
  EXPECT_EQ(model.sequential->forward(batch.input).dtype(), torch::kFloat) << "autocast still on after the step";
}

TEST(Precision, Fp16IsRefusedOnACpu) {
  Model model = smallAutocastModel();
  PipeOptions options;
  options.balance = {2, 3};
  options.devices = {torch::kCPU, torch::kCPU};
  options.precision = Precision::Fp16;
  try {
    Pipe pipe(model.sequential, options);
    FAIL() << "fp16 accepted on a CPU";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "precision fp16 needs a CUDA device, got cpu: LibTorch autocasts CPU ops to bf16 only (use bf16)");
  }
}

}  // namespace
}  // namespace pipeprof
