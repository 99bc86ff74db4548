// Tests for the training step's optimizer: every optimizer trains the threaded Pipe and the
// ranks exactly as it trains the unpartitioned model.
#include <pipeprof/core/optimizer.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/training_loop.h>

#include "precision_reference.h"
#include "rank_world.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace pipeprof {
namespace {

constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kDataSeed = 3;
constexpr std::int64_t kSteps = 4;  // one warm-up step, three measured: Adam's moments at work

/// Linear, tanh, linear, tanh, linear (width 6), initialised from seed 0 every time.
Model smallTanhModel() {
  torch::manual_seed(0);
  Model model;
  model.name = "small";
  model.sequential = torch::nn::Sequential(torch::nn::Linear(4, 6), torch::nn::Tanh(), torch::nn::Linear(6, 6),
                                           torch::nn::Tanh(), torch::nn::Linear(6, 3));
  // Its own generator: ranks that are threads of one process build their batches at once.
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
    torch::Tensor input = torch::randn({batch, 4}, generator);
    return Batch{input, torch::randn({batch, 3}, generator)};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  return model;
}

/// kSteps steps of the unpartitioned model: every step's loss, and the gradients the last one
/// left (LibTorch's optimizers step without touching them).
struct ReferenceRun {
  std::vector<double> losses;
  std::vector<torch::Tensor> gradients;
};

/// kSteps steps of the unpartitioned model with LibTorch's own optimizer for `spec`, built here
/// from the spec's values (not through pipeprof's code).
ReferenceRun referenceRun(const OptimizerSpec& spec) {
  Model model = smallTanhModel();
  const Batch batch = model.makeBatch(kBatch, kDataSeed);
  std::vector<torch::Tensor> parameters = model.sequential->parameters();
  const double decay = spec.effectiveWeightDecay();
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  using torch::optim::AdamOptions;
  using torch::optim::AdamWOptions;
  using torch::optim::SGDOptions;
  switch (spec.kind) {
    case OptimizerKind::Sgd:
      optimizer = std::make_unique<torch::optim::SGD>(parameters, SGDOptions(spec.learningRate).weight_decay(decay));
      break;
    case OptimizerKind::Momentum:
      optimizer = std::make_unique<torch::optim::SGD>(
          parameters, SGDOptions(spec.learningRate).momentum(spec.momentum).weight_decay(decay));
      break;
    case OptimizerKind::Adam:
      optimizer = std::make_unique<torch::optim::Adam>(
          parameters, AdamOptions(spec.learningRate).betas({spec.beta1, spec.beta2}).eps(spec.eps).weight_decay(decay));
      break;
    case OptimizerKind::AdamW:
      optimizer = std::make_unique<torch::optim::AdamW>(
          parameters,
          AdamWOptions(spec.learningRate).betas({spec.beta1, spec.beta2}).eps(spec.eps).weight_decay(decay));
      break;
  }
  ReferenceRun run;
  for (std::int64_t s = 0; s < kSteps; ++s) {
    optimizer->zero_grad();
    torch::Tensor loss = model.loss(model.sequential->forward(batch.input), batch.target);
    loss.backward();
    optimizer->step();
    run.losses.push_back(loss.item<double>());
  }
  for (const torch::Tensor& parameter : parameters) run.gradients.push_back(parameter.grad().clone());
  return run;
}

std::vector<double> referenceLosses(const OptimizerSpec& spec) { return referenceRun(spec).losses; }

TrainingOptions trainingOptions(const OptimizerSpec& spec, ScheduleKind schedule, std::vector<std::int64_t> balance,
                                std::int64_t stagesPerDevice) {
  TrainingOptions options;
  options.balance = std::move(balance);
  options.schedule = schedule;
  options.stagesPerDevice = stagesPerDevice;
  options.chunks = 4;
  options.checkpoint = Checkpoint::ExceptLast;
  options.devices = {torch::kCPU, torch::kCPU};
  options.batch = kBatch;
  options.dataSeed = kDataSeed;
  options.warmupSteps = 1;
  options.steps = kSteps - 1;
  options.optimizer = spec;
  return options;
}

std::vector<OptimizerSpec> everyOptimizer() {
  std::vector<OptimizerSpec> specs;
  for (OptimizerKind kind : kOptimizerKinds) {
    OptimizerSpec spec;
    spec.kind = kind;
    spec.learningRate = kind == OptimizerKind::Sgd || kind == OptimizerKind::Momentum ? 0.2 : 0.05;
    if (kind == OptimizerKind::AdamW) spec.weightDecay = 0.1;  // large enough to matter in four steps
    if (kind == OptimizerKind::Adam) spec.beta2 = 0.99;
    specs.push_back(spec);
  }
  return specs;
}

struct ShapeCase {
  ScheduleKind schedule;
  std::vector<std::int64_t> balance;
  std::int64_t stagesPerDevice;
};

TEST(Optimizers, EveryScheduleTrainsThreadedAsTheUnpartitionedModel) {
  const std::vector<ShapeCase> shapes = {{ScheduleKind::GPipe, {2, 3}, 1},
                                         {ScheduleKind::OneFOneB, {3, 2}, 1},
                                         {ScheduleKind::Interleaved, {1, 1, 2, 1}, 2}};
  for (const OptimizerSpec& spec : everyOptimizer()) {
    const std::vector<double> expected = referenceLosses(spec);
    for (const ShapeCase& shape : shapes) {
      Model model = smallTanhModel();
      const TrainingResult result =
          trainAndMeasure(model, trainingOptions(spec, shape.schedule, shape.balance, shape.stagesPerDevice));
      test::expectSameLosses(result.losses, expected,
                             describeOptimizer(spec) + ", " + std::string(scheduleKindName(shape.schedule)));
    }
  }
}

TEST(Optimizers, TwoRanksTrainAsTheUnpartitionedModel) {
  for (const OptimizerSpec& spec : everyOptimizer()) {
    const std::vector<double> expected = referenceLosses(spec);
    std::vector<Model> models{smallTanhModel(), smallTanhModel()};
    const TrainingOptions options = trainingOptions(spec, ScheduleKind::OneFOneB, {2, 3}, 1);
    std::vector<RankTrainingResult> results(2);
    const std::string failures = test::joined(test::runRanks(2, [&](int r, Transport& transport) {
      results[static_cast<std::size_t>(r)] = trainRank(models[static_cast<std::size_t>(r)], options, transport);
    }));
    ASSERT_EQ(failures, "");
    test::expectSameLosses(results[1].losses, expected, describeOptimizer(spec) + ", 2 ranks");
  }
}

TEST(Optimizers, ARunLeavesItsLastStepsGradients) {
  // Each device zeroes its gradients for the next step after its optimizer step, but for the
  // last step's: after the run they are the last step's alone, neither zeroed nor summed with the
  // steps' before.
  const OptimizerSpec spec = everyOptimizer().front();
  const ReferenceRun expected = referenceRun(spec);
  Model model = smallTanhModel();
  trainAndMeasure(model, trainingOptions(spec, ScheduleKind::OneFOneB, {2, 3}, 1));
  const std::vector<torch::Tensor> parameters = model.sequential->parameters();
  ASSERT_EQ(parameters.size(), expected.gradients.size());
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    ASSERT_TRUE(parameters[k].grad().defined()) << "parameter " << k;
    EXPECT_TRUE(torch::allclose(parameters[k].grad(), expected.gradients[k], 1e-5, 1e-6))
        << "parameter " << k << ": " << parameters[k].grad() << " against " << expected.gradients[k];
  }
}

TEST(Optimizers, TheOptimizersTrainDifferently) {
  // Four steps from the same start: each optimizer's last loss is its own (none falls back to SGD).
  std::vector<double> last;
  for (const OptimizerSpec& spec : everyOptimizer()) last.push_back(referenceLosses(spec).back());
  for (std::size_t a = 0; a < last.size(); ++a) {
    for (std::size_t b = a + 1; b < last.size(); ++b) EXPECT_NE(last[a], last[b]) << a << " vs " << b;
  }
}

TEST(Optimizers, AHyperparameterOutOfRangeIsRefusedBeforeAStep) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::Adam;
  spec.beta1 = 1.0;
  Model model = smallTanhModel();
  try {
    trainAndMeasure(model, trainingOptions(spec, ScheduleKind::GPipe, {2, 3}, 1));
    FAIL() << "beta1 1 was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "beta1 must be in [0, 1), got 1");
  }
}

}  // namespace
}  // namespace pipeprof
