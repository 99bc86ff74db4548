// Tests for fp16's dynamic loss scaling: the scale's rule, unscaling, and training with it --
// threaded and as ranks -- equal to training without it until a gradient overflows, then a
// skipped step on every device.
#include <pipeprof/runtime/grad_scaler.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/training_loop.h>

#include "precision_reference.h"
#include "rank_world.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

TEST(GradScaler, GrowsAfterTheIntervalAndBacksOffOnAnOverflow) {
  GradScalerOptions options;
  options.initScale = 8;
  options.growthInterval = 2;
  GradScaler scaler(options);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 8);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 16) << "two good steps in a row";
  scaler.update(false);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 8) << "an overflow halves it and restarts the count";
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 8);
}

TEST(GradScaler, UnscalesAndFindsInfAndNan) {
  torch::Tensor a = torch::ones({3}).requires_grad_();
  torch::Tensor b = torch::ones({2}).requires_grad_();
  a.mutable_grad() = torch::full({3}, 8.0);
  EXPECT_FALSE(GradScaler::unscale({a, b}, 4.0)) << "b has no gradient: nothing to check";
  EXPECT_TRUE(torch::equal(a.grad(), torch::full({3}, 2.0)));
  b.mutable_grad() = torch::tensor({1.0F, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_TRUE(GradScaler::unscale({a, b}, 1.0));
  b.mutable_grad() = torch::tensor({1.0F, std::numeric_limits<float>::infinity()});
  EXPECT_TRUE(GradScaler::unscale({b}, 2.0));
}

TEST(GradScaler, RefusesBadOptions) {
  GradScalerOptions options;
  options.initScale = 0;
  EXPECT_THROW(GradScaler{options}, std::invalid_argument);
  options = {};
  options.backoffFactor = 1;
  EXPECT_THROW(GradScaler{options}, std::invalid_argument);
}

/// Linear, tanh, linear; `targetScale` scales the targets (a large loss overflows a scaled backward).
Model smallModel(double targetScale = 1.0) {
  torch::manual_seed(0);
  Model model;
  model.name = "small";
  model.sequential = torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 3));
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
    torch::Tensor input = torch::randn({batch, 4}, generator);
    return Batch{input, torch::randn({batch, 3}, generator)};
  };
  model.loss = [targetScale](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output, target * targetScale);
  };
  return model;
}

TrainingOptions scalerTrainingOptions(std::optional<GradScalerOptions> scaler) {
  TrainingOptions options;
  options.balance = {2, 1};
  options.schedule = ScheduleKind::OneFOneB;
  options.chunks = 2;
  options.devices = {torch::kCPU, torch::kCPU};
  options.batch = 8;
  options.warmupSteps = 0;
  options.steps = 4;
  options.optimizer.kind = OptimizerKind::Adam;
  options.optimizer.learningRate = 0.05;
  options.gradScaler = scaler;
  return options;
}

TEST(GradScaler, ScaledTrainingEqualsUnscaledTraining) {
  Model plain = smallModel();
  const std::vector<double> expected = trainAndMeasure(plain, scalerTrainingOptions(std::nullopt)).losses;
  GradScalerOptions scaler;
  scaler.initScale = 1024;  // a power of two: scaling and unscaling are exact
  Model scaled = smallModel();
  test::expectSameLosses(trainAndMeasure(scaled, scalerTrainingOptions(scaler)).losses, expected, "scaled");
}

TEST(GradScaler, AnOverflowSkipsTheStepOnEveryDeviceThenTrainingGoesOn) {
  GradScalerOptions scaler;
  scaler.initScale = 1e38;  // times a loss of about 1e12: the scaled gradients overflow fp32
  scaler.backoffFactor = 1e-30;
  Model model = smallModel(1e6);
  const std::vector<double> losses = trainAndMeasure(model, scalerTrainingOptions(scaler)).losses;
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_EQ(losses[1], losses[0]) << "the first step was skipped: nothing changed";
  EXPECT_NE(losses[2], losses[1]) << "at a scale of 1e8 the second stepped";
}

TEST(GradScaler, RanksSkipTogether) {
  GradScalerOptions scaler;
  scaler.initScale = 1e38;
  scaler.backoffFactor = 1e-30;
  Model threadedModel = smallModel(1e6);
  const std::vector<double> expected = trainAndMeasure(threadedModel, scalerTrainingOptions(scaler)).losses;
  ASSERT_EQ(expected[1], expected[0]) << "the threaded Pipe skipped the first step";
  std::vector<Model> models{smallModel(1e6), smallModel(1e6)};
  const TrainingOptions options = scalerTrainingOptions(scaler);
  std::vector<RankTrainingResult> results(2);
  const std::string failures = test::joined(test::runRanks(2, [&](int r, Transport& transport) {
    results[static_cast<std::size_t>(r)] = trainRank(models[static_cast<std::size_t>(r)], options, transport);
  }));
  ASSERT_EQ(failures, "");
  test::expectSameLosses(results[1].losses, expected, "scaled, 2 ranks");
}

}  // namespace
}  // namespace pipeprof
