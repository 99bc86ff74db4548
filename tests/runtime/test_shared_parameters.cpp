// Parameters shared by stages on different devices (gpt --tie-embeddings): replicated, their
// gradients summed once per step, in both executors; the copies stay bit-identical.
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/stage_runtime.h>
#include <pipeprof/runtime/training_loop.h>

#include "pipe_test_util.h"
#include "rank_world.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

namespace pipeprof {
namespace {

using test::close;
using test::stageOptions;

/// gpt at width 32, depth 2 (embed block0 block1 norm head) with its head tied to its embedding.
Model tiedGpt() {
  ModelOptions options;
  options.width = 32;
  options.depth = 2;
  options.seed = 5;
  options.tieEmbeddings = true;
  return buildModel("gpt", options);
}

constexpr const char* kEmbedding = "embed.tokens.weight";
constexpr const char* kHead = "head.weight";

struct SharedExpected {
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> grads;
};

SharedExpected unpartitioned(const Batch& batch) {
  Model whole = tiedGpt();
  EXPECT_TRUE(whole.sequential->named_parameters()[kHead].is_same(whole.sequential->named_parameters()[kEmbedding]));
  torch::Tensor loss = whole.loss(whole.sequential->forward(batch.input), batch.target);
  loss.backward();
  SharedExpected expected{loss.detach(), {}};
  for (const auto& named : whole.sequential->named_parameters()) expected.grads[named.key()] = named.value().grad();
  return expected;
}

struct SharedCase {
  ScheduleKind kind;
  std::int64_t v;
  std::vector<std::int64_t> balance;
};
// The embedding on device 0, the head on device 1 (the last stage is on device p - 1).
const std::vector<SharedCase> kSharedCases{{ScheduleKind::GPipe, 1, {2, 3}},
                                           {ScheduleKind::OneFOneB, 1, {1, 2, 2}},
                                           {ScheduleKind::Interleaved, 2, {1, 1, 1, 2}}};

TEST(SharedParameters, ATiedHeadTrainsAsTheUnpartitionedModelsOneParameterUnderEverySchedule) {
  const Batch batch = tiedGpt().makeBatch(8, 3);
  const SharedExpected expected = unpartitioned(batch);
  for (const SharedCase& c : kSharedCases) {
    for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
      SCOPED_TRACE(scheduleKindName(c.kind) + " " + std::string(checkpointName(mode)));
      Model model = tiedGpt();
      PipeOptions options;
      static_cast<PipelineShape&>(options) = stageOptions(c.kind, c.v, c.balance, 4, mode);
      Pipe pipe(model.sequential, c.balance, options);
      const auto named = pipe.module()->named_parameters();
      ASSERT_FALSE(named[kHead].is_same(named[kEmbedding])) << "the head's device holds a replica";
      const torch::Tensor loss = pipe.step(batch.input, batch.target, model.loss);
      ASSERT_TRUE(close(loss, expected.loss)) << loss << expected.loss;
      for (const auto& parameter : named) {
        ASSERT_TRUE(close(parameter.value().grad(), expected.grads.at(parameter.key()))) << parameter.key();
      }
      EXPECT_TRUE(torch::equal(named[kHead].grad(), named[kEmbedding].grad())) << "one sum, written to both";
    }
  }
}

TEST(SharedParameters, ForwardThenBackwardSumsTheTiedGradientsToo) {
  const Batch batch = tiedGpt().makeBatch(8, 3);
  const SharedExpected expected = unpartitioned(batch);
  Model model = tiedGpt();
  PipeOptions options;
  static_cast<PipelineShape&>(options) = stageOptions(ScheduleKind::GPipe, 1, {2, 3}, 4, Checkpoint::ExceptLast);
  Pipe pipe(model.sequential, {2, 3}, options);
  model.loss(pipe.forward(batch.input), batch.target).backward();
  const auto named = pipe.module()->named_parameters();
  for (const auto& parameter : named) {
    ASSERT_TRUE(close(parameter.value().grad(), expected.grads.at(parameter.key()))) << parameter.key();
  }
  EXPECT_TRUE(torch::equal(named[kHead].grad(), named[kEmbedding].grad()));
}

TEST(SharedParameters, RanksExchangeTheTiedGradientsAndGetTheUnpartitionedModels) {
  const Batch batch = tiedGpt().makeBatch(8, 3);
  const SharedExpected expected = unpartitioned(batch);
  for (const SharedCase& c : kSharedCases) {
    SCOPED_TRACE(scheduleKindName(c.kind));
    const StageOptions options = stageOptions(c.kind, c.v, c.balance, 4, Checkpoint::ExceptLast);
    const int p = static_cast<int>(c.balance.size() / static_cast<std::size_t>(c.v));
    std::vector<torch::nn::Sequential> models;
    for (int r = 0; r < p; ++r) models.push_back(tiedGpt().sequential);
    const test::RanksStep ranks = test::stepOnRanks(models, options, batch.input, batch.target, tiedGpt().loss);
    ASSERT_EQ(ranks.errors, "");
    ASSERT_TRUE(close(ranks.loss, expected.loss)) << ranks.loss << expected.loss;
    for (const auto& [name, grad] : expected.grads) ASSERT_TRUE(close(ranks.grads.at(name), grad)) << name;
    EXPECT_TRUE(torch::equal(ranks.grads.at(kHead), ranks.grads.at(kEmbedding)));
  }
}

TEST(SharedParameters, TheCopiesAreBitIdenticalAfterTenAdamWSteps) {
  Model model = tiedGpt();
  TrainingOptions options;
  static_cast<PipelineShape&>(options) = stageOptions(ScheduleKind::OneFOneB, 1, {2, 3}, 4, Checkpoint::Never);
  options.devices = {torch::kCPU, torch::kCPU};
  options.batch = 8;
  options.warmupSteps = 0;
  options.steps = 10;
  options.optimizer.kind = OptimizerKind::AdamW;
  options.optimizer.learningRate = 0.01;
  const TrainingResult result = trainAndMeasure(model, options);
  ASSERT_EQ(result.losses.size(), 10u);
  EXPECT_LT(result.losses.back(), result.losses.front());
  const auto named = model.sequential->named_parameters();
  ASSERT_FALSE(named[kHead].is_same(named[kEmbedding]));
  EXPECT_TRUE(torch::equal(named[kHead], named[kEmbedding]));
  EXPECT_FALSE(torch::equal(named[kHead], tiedGpt().sequential->named_parameters()[kHead])) << "it trained";
}

TEST(SharedParameters, RanksKeepTheirCopiesBitIdenticalOverTenAdamWSteps) {
  const StageOptions options = stageOptions(ScheduleKind::OneFOneB, 1, {2, 3}, 4, Checkpoint::ExceptLast);
  std::vector<Model> models{tiedGpt(), tiedGpt()};  // built here: the ranks' threads would race for the seed
  const Batch batch = models[0].makeBatch(8, 3);
  std::vector<torch::Tensor> copies(2);  // rank 0's embedding, rank 1's head
  const auto errors = test::runRanks(2, [&](int rank, Transport& transport) {
    Model& model = models[static_cast<std::size_t>(rank)];
    StageRuntime runtime(model.sequential, options, transport);
    torch::optim::AdamW optimizer(runtime.parameters(), torch::optim::AdamWOptions(0.01));
    for (int step = 0; step < 10; ++step) {
      optimizer.zero_grad();
      runtime.step(batch.input, batch.target, model.loss, 0);
      optimizer.step();
    }
    const auto names = runtime.parameterNames();
    const auto parameters = runtime.parameters();
    for (std::size_t k = 0; k < names.size(); ++k) {
      if (names[k] == (rank == 0 ? kEmbedding : kHead)) copies[static_cast<std::size_t>(rank)] = parameters[k];
    }
  });
  ASSERT_EQ(test::joined(errors), "");
  ASSERT_TRUE(copies[0].defined() && copies[1].defined());
  EXPECT_TRUE(torch::equal(copies[0], copies[1]));
  EXPECT_FALSE(torch::equal(copies[0], tiedGpt().sequential->named_parameters()[kEmbedding])) << "it trained";
}

TEST(SharedParameters, OnlyGptTiesItsEmbeddings) {
  ModelOptions options;
  options.tieEmbeddings = true;
  EXPECT_THROW(buildModel("mlp", options), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
