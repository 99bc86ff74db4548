// Tests for the training step's precision: under bf16 autocast every schedule, threaded and as
// ranks, computes what the unpartitioned model computes under the same autocast, with fp32
// weights and gradients; fp16 is refused on CPUs.
#include "autocast.h"

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

constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kChunks = 4;
constexpr std::int64_t kDataSeed = 5;
constexpr std::int64_t kSteps = 3;

/// Linear, tanh, linear, tanh, linear (width 16), initialised from seed 0 every time.
Model smallModel() {
  torch::manual_seed(0);
  Model model;
  model.name = "small";
  model.sequential = torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 16),
                                           torch::nn::Tanh(), torch::nn::Linear(16, 4));
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
    torch::Tensor input = torch::randn({batch, 8}, generator);
    return Batch{input, torch::randn({batch, 4}, generator)};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output.to(torch::kFloat), target);
  };
  return model;
}

OptimizerSpec adamw() {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::AdamW;
  spec.learningRate = 0.05;
  spec.weightDecay = 0.1;
  return spec;
}

/// One step of the unpartitioned model on kChunks micro-batches as the Pipe splits them: each
/// micro-batch's forward and loss under autocast (its cast cache kept for the step), its loss
/// weighted by its share of the rows, its backward outside autocast. Returns the loss.
double referenceStep(Model& model, const Batch& batch, Precision precision) {
  const std::vector<torch::Tensor> inputs = torch::chunk(batch.input, kChunks);
  const std::vector<torch::Tensor> targets = torch::chunk(batch.target, kChunks);
  double total = 0;
  AutocastScope autocast(precision, torch::kCPU);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const double weight = static_cast<double>(inputs[i].size(0)) / static_cast<double>(kBatch);
    torch::Tensor loss = model.loss(model.sequential->forward(inputs[i]), targets[i]) * weight;
    AutocastPause pause;
    loss.backward();
    total += loss.item<double>();
  }
  return total;
}

/// The losses of kSteps steps of the unpartitioned model under `precision` with AdamW.
std::vector<double> referenceLosses(Precision precision) {
  Model model = smallModel();
  const Batch batch = model.makeBatch(kBatch, kDataSeed);
  const OptimizerSpec spec = adamw();
  torch::optim::AdamW optimizer(
      model.sequential->parameters(),
      torch::optim::AdamWOptions(spec.learningRate).weight_decay(spec.effectiveWeightDecay()));
  std::vector<double> losses;
  for (std::int64_t s = 0; s < kSteps; ++s) {
    optimizer.zero_grad();
    losses.push_back(referenceStep(model, batch, precision));
    optimizer.step();
  }
  return losses;
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
  options.optimizer = adamw();
  options.precision = Precision::Bf16;
  return options;
}

void expectSameLosses(const std::vector<double>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t s = 0; s < expected.size(); ++s) {
    EXPECT_NEAR(actual[s], expected[s], 1e-6 * std::abs(expected[s])) << what << ", step " << s;
  }
}

void expectSameGradients(const std::vector<torch::Tensor>& actual, const std::vector<torch::Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    ASSERT_TRUE(actual[k].grad().defined()) << "parameter " << k;
    EXPECT_EQ(actual[k].dtype(), torch::kFloat) << "weights stay fp32, parameter " << k;
    EXPECT_EQ(actual[k].grad().dtype(), torch::kFloat) << "gradients stay fp32, parameter " << k;
    EXPECT_TRUE(torch::allclose(actual[k].grad(), expected[k].grad(), 1e-6, 1e-9)) << "parameter " << k;
  }
}

TEST(Precision, Bf16DiffersFromFp32) {
  const std::vector<double> fp32 = referenceLosses(Precision::Fp32);
  const std::vector<double> bf16 = referenceLosses(Precision::Bf16);
  // bf16 keeps 8 bits of mantissa: the losses move in the third digit, not the seventh.
  EXPECT_GT(std::abs(fp32.front() - bf16.front()), 1e-5 * std::abs(fp32.front()));
}

TEST(Precision, EveryScheduleTrainsThreadedAsTheUnpartitionedModelUnderBf16) {
  const std::vector<double> expected = referenceLosses(Precision::Bf16);
  struct Case {
    ScheduleKind schedule;
    std::vector<std::int64_t> balance;
    std::int64_t stagesPerDevice;
    Checkpoint checkpoint;
  };
  const std::vector<Case> cases = {{ScheduleKind::GPipe, {2, 3}, 1, Checkpoint::Never},
                                   {ScheduleKind::GPipe, {3, 2}, 1, Checkpoint::Always},
                                   {ScheduleKind::OneFOneB, {3, 2}, 1, Checkpoint::ExceptLast},
                                   {ScheduleKind::Interleaved, {1, 1, 2, 1}, 2, Checkpoint::ExceptLast}};
  for (const Case& c : cases) {
    Model model = smallModel();
    const TrainingResult result =
        trainAndMeasure(model, trainingOptions(c.schedule, c.balance, c.stagesPerDevice, c.checkpoint));
    expectSameLosses(result.losses, expected,
                     std::string(scheduleKindName(c.schedule)) + " " + std::string(checkpointName(c.checkpoint)));
  }
}

TEST(Precision, TwoRanksTrainAsTheUnpartitionedModelUnderBf16) {
  const std::vector<double> expected = referenceLosses(Precision::Bf16);
  std::vector<Model> models{smallModel(), smallModel()};
  const TrainingOptions options = trainingOptions(ScheduleKind::OneFOneB, {2, 3}, 1, Checkpoint::ExceptLast);
  std::vector<RankTrainingResult> results(2);
  const std::string failures = testing::joined(testing::runRanks(2, [&](int r, Transport& transport) {
    results[static_cast<std::size_t>(r)] = trainRank(models[static_cast<std::size_t>(r)], options, transport);
  }));
  ASSERT_EQ(failures, "");
  expectSameLosses(results[1].losses, expected, "2 ranks");
}

TEST(Precision, ThreadedGradientsAreTheUnpartitionedModelsInFp32) {
  Model reference = smallModel();
  const Batch batch = reference.makeBatch(kBatch, kDataSeed);
  referenceStep(reference, batch, Precision::Bf16);

  Model model = smallModel();
  PipeOptions options;
  options.balance = {2, 3};
  options.chunks = kChunks;
  options.checkpoint = Checkpoint::ExceptLast;
  options.devices = {torch::kCPU, torch::kCPU};
  options.precision = Precision::Bf16;
  Pipe pipe(model.sequential, options);
  pipe.step(batch.input, batch.target, model.loss);
  expectSameGradients(pipe.parameters(), reference.sequential->parameters());
}

TEST(Precision, RankGradientsAreTheUnpartitionedModelsInFp32) {
  Model reference = smallModel();
  const Batch batch = reference.makeBatch(kBatch, kDataSeed);
  referenceStep(reference, batch, Precision::Bf16);
  const std::vector<torch::Tensor> expected = reference.sequential->parameters();

  std::vector<Model> models{smallModel(), smallModel()};
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
  expectSameGradients(actual, expected);
}

TEST(Precision, TheCallersAutocastIsLeftAsItWas) {
  Model model = smallModel();
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
  Model model = smallModel();
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
