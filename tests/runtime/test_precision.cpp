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

using test::adamwWithDecay;
using test::everyScheduleFamily;
using test::expectSameFp32Gradients;
using test::expectSameLosses;
using test::pipelineTraining;
using test::referenceLosses;
using test::referenceStep;
using test::referenceTraining;
using test::ScheduleCase;
using test::smallAutocastModel;
using test::twoPartitionPipe;

const std::vector<torch::Device> kTwoCpus{torch::kCPU, torch::kCPU};
const test::ReferenceTraining kBf16 = referenceTraining(torch::kCPU, Precision::Bf16);

/// The losses of the unpartitioned model's steps on the CPU under `precision` with AdamW.
std::vector<double> cpuReferenceLosses(Precision precision) {
  return referenceLosses(referenceTraining(torch::kCPU, precision), adamwWithDecay());
}

TEST(Precision, Bf16DiffersFromFp32) {
  const std::vector<double> fp32 = cpuReferenceLosses(Precision::Fp32);
  const std::vector<double> bf16 = cpuReferenceLosses(Precision::Bf16);
  // bf16 keeps 8 bits of mantissa: the losses move in the third digit, not the seventh.
  EXPECT_GT(std::abs(fp32.front() - bf16.front()), 1e-5 * std::abs(fp32.front()));
}

TEST(Precision, EveryScheduleTrainsThreadedAsTheUnpartitionedModelUnderBf16) {
  const std::vector<double> expected = cpuReferenceLosses(Precision::Bf16);
  for (const ScheduleCase& schedule : everyScheduleFamily()) {
    Model model = smallAutocastModel();
    const TrainingResult result = trainAndMeasure(model, pipelineTraining(kBf16, schedule, kTwoCpus));
    expectSameLosses(result.losses, expected, schedule.label());
  }
}

TEST(Precision, TwoRanksTrainAsTheUnpartitionedModelUnderBf16) {
  const std::vector<double> expected = cpuReferenceLosses(Precision::Bf16);
  std::vector<Model> models{smallAutocastModel(), smallAutocastModel()};
  const TrainingOptions options =
      pipelineTraining(kBf16, {ScheduleKind::OneFOneB, {2, 3}, 1, Checkpoint::ExceptLast}, kTwoCpus);
  std::vector<RankTrainingResult> results(2);
  const std::string failures = test::joined(test::runRanks(2, [&](int r, Transport& transport) {
    results[static_cast<std::size_t>(r)] = trainRank(models[static_cast<std::size_t>(r)], options, transport);
  }));
  ASSERT_EQ(failures, "");
  expectSameLosses(results[1].losses, expected, "2 ranks");
}

TEST(Precision, ThreadedGradientsAreTheUnpartitionedModelsInFp32) {
  Model reference = smallAutocastModel();
  const Batch batch = reference.makeBatch(kBf16.batch, kBf16.dataSeed);
  referenceStep(reference, batch, kBf16);

  Model model = smallAutocastModel();
  Pipe pipe(model.sequential, twoPartitionPipe(kBf16, kTwoCpus));
  pipe.step(batch.input, batch.target, model.loss);
  expectSameFp32Gradients(pipe.parameters(), reference.sequential->parameters());
}

TEST(Precision, RankGradientsAreTheUnpartitionedModelsInFp32) {
  Model reference = smallAutocastModel();
  const Batch batch = reference.makeBatch(kBf16.batch, kBf16.dataSeed);
  referenceStep(reference, batch, kBf16);
  const std::vector<torch::Tensor> expected = reference.sequential->parameters();

  std::vector<Model> models{smallAutocastModel(), smallAutocastModel()};
  std::vector<std::vector<torch::Tensor>> parameters(2);
  const std::string failures = test::joined(test::runRanks(2, [&](int r, Transport& transport) {
    StageOptions options;
    options.balance = {2, 3};
    options.chunks = kBf16.chunks;
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
  const Batch batch = model.makeBatch(kBf16.batch, kBf16.dataSeed);
  PipeOptions options;
  options.balance = {5};  // one device: its ops run on this thread
  options.chunks = kBf16.chunks;
  options.precision = Precision::Bf16;
  Pipe pipe(model.sequential, options);
  pipe.step(batch.input, batch.target, model.loss);
  EXPECT_EQ(model.sequential->forward(batch.input).dtype(), torch::kFloat) << "autocast still on after the step";
}

TEST(Precision, Fp16IsRefusedOnACpu) {
  Model model = smallAutocastModel();
  PipeOptions options;
  options.balance = {2, 3};
  options.devices = kTwoCpus;
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
