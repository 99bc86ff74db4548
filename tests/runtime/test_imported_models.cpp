// Models users bring as TorchScript: Sequential subclasses, token ids, cross-entropy and next-token
// losses, in-place layers at stage boundaries (fixtures: tests/fixtures/make_imported_models.py).
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"
#include "support/fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <string>

namespace pipeprof {
namespace {

using test::close;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

const std::string kTinyClassifier = test::fixturePath("tiny_classifier.pt");
const std::string kTinyLanguageModel = test::fixturePath("tiny_language_model.pt");

TEST(ImportedModels, AClassifierSubclassTrainsWithCrossEntropyOnLabels) {
  Model model = buildModel(kTinyClassifier);
  EXPECT_EQ(model.sequential->size(), 7u);
  const Batch batch = model.makeBatch(4, 1);
  EXPECT_EQ(batch.input.sizes(), (std::vector<std::int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(batch.target.scalar_type(), torch::kLong);
  EXPECT_EQ(batch.target.sizes(), (std::vector<std::int64_t>{4}));
  EXPECT_TRUE(batch.target.ge(0).all().item<bool>() && batch.target.lt(5).all().item<bool>());
  // The value make_imported_models.py printed for this input and these labels.
  const torch::Tensor images = torch::arange(384, torch::kFloat32).reshape({2, 3, 8, 8}) / 100;
  const torch::Tensor labels = torch::tensor({1, 3}, torch::kLong);
  EXPECT_NEAR(model.loss(model.sequential->forward(images), labels).item<double>(), 1.5831087827682495, 1e-5);
}

TEST(ImportedModels, ALanguageModelTakesTokenIdsAndLearnsTheNextToken) {
  Model model = buildModel(kTinyLanguageModel);
  const Batch batch = model.makeBatch(3, 2);
  EXPECT_EQ(batch.input.scalar_type(), torch::kLong);
  EXPECT_EQ(batch.input.sizes(), (std::vector<std::int64_t>{3, 6}));
  EXPECT_TRUE(batch.input.lt(16).all().item<bool>());
  EXPECT_TRUE(torch::equal(batch.target, batch.input.narrow(1, 1, 5)));
  const torch::Tensor tokens = torch::arange(12, torch::kLong).reshape({2, 6}) % 16;
  EXPECT_NEAR(model.loss(model.sequential->forward(tokens), tokens.narrow(1, 1, 5)).item<double>(), 4.900314807891846,
              1e-5);
}

TEST(ImportedModels, OptionsOverrideTheAttributes) {
  ModelOptions options;
  options.inputShape = {4};
  options.vocabSize = 9;
  const Batch batch = buildModel(kTinyLanguageModel, options).makeBatch(2, 0);
  EXPECT_EQ(batch.input.sizes(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_TRUE(batch.input.lt(9).all().item<bool>());
  options = {};
  options.loss = "mse";
  const Model mse = buildModel(kTinyClassifier, options);
  const torch::Tensor output = torch::ones({2, 5});
  EXPECT_DOUBLE_EQ(mse.loss(output, mse.makeBatch(2, 0).target).item<double>(), 1.0);
}

/// A step of the pipe on `balance` equals the unpartitioned model's loss and gradients.
void expectPipeEqualsTheWholeModel(const std::string& path, const std::vector<std::int64_t>& balance, ScheduleKind kind,
                                   std::int64_t v) {
  Model whole = buildModel(path);
  const Batch batch = whole.makeBatch(8, 3);
  torch::Tensor expected = whole.loss(whole.sequential->forward(batch.input.clone()), batch.target);
  expected.backward();
  PipeOptions options;
  options.chunks = 4;
  options.schedule = kind;
  options.stagesPerDevice = v;
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    SCOPED_TRACE(scheduleKindName(kind) + " " + std::string(checkpointName(mode)));
    options.checkpoint = mode;
    Model split = buildModel(path);
    Pipe pipe(split.sequential, balance, options);
    const torch::Tensor loss = pipe.step(batch.input, batch.target, split.loss);
    ASSERT_TRUE(close(loss, expected.detach())) << loss << expected;
    const auto expectedParameters = whole.sequential->parameters();
    const auto parameters = pipe.parameters();
    ASSERT_EQ(parameters.size(), expectedParameters.size());
    for (std::size_t k = 0; k < parameters.size(); ++k) {
      ASSERT_TRUE(close(parameters[k].grad(), expectedParameters[k].grad())) << "parameter " << k;
    }
  }
}

TEST(ImportedModels, AClassifierWithInPlaceReLUsAtEveryStageBoundaryGivesTheWholeModelsGradients) {
  // conv0 | relu1 conv2 | relu3 | pool4 flatten5 fc6: stages 1 and 2 start by writing their input.
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    expectPipeEqualsTheWholeModel(kTinyClassifier, {1, 2, 1, 3}, kind, 1);
  }
  expectPipeEqualsTheWholeModel(kTinyClassifier, {1, 2, 1, 3}, ScheduleKind::Interleaved, 2);
}

TEST(ImportedModels, ALanguageModelsPipeGivesTheWholeModelsLossAndGradients) {
  // embed0 | fc1 relu2 | norm3 head4: the token ids need no gradient, the logits' loss is
  // next_token, and the head's weight is the embedding's: a replica on the last device.
  const auto named = buildModel(kTinyLanguageModel).sequential->named_parameters();
  ASSERT_TRUE(named["4.weight"].is_same(named["0.weight"])) << "scripted tied, loaded tied";
  expectPipeEqualsTheWholeModel(kTinyLanguageModel, {1, 2, 2}, ScheduleKind::OneFOneB, 1);
  expectPipeEqualsTheWholeModel(kTinyLanguageModel, {1, 1, 2, 1}, ScheduleKind::Interleaved, 2);
}

TEST(ImportedModels, ASequentialSubclassWithItsOwnForwardIsSplitAtItsChildrensCalls) {
  // Residual's forward runs its children and adds 1: not a Sequential's forward, so a graph.
  Model model = buildModel(test::fixturePath("not_a_sequential.pt"));
  EXPECT_THAT(layerNames(model), ::testing::ElementsAre("0", "1"));
  torch::jit::Module scripted = torch::jit::load(test::fixturePath("not_a_sequential.pt"));
  const torch::Tensor x = torch::randn({3, 4});
  EXPECT_TRUE(torch::allclose(model.sequential->forward(x), scripted.forward({x}).toTensor()));
}

TEST(ImportedModels, WhatCannotBeTrainedIsRefusedNamingTheFileAndTheSetting) {
  ModelOptions options;
  options.loss = "hinge";
  EXPECT_THAT([&] { buildModel(kTinyClassifier, options); },
              ThrowsMessage<std::invalid_argument>(
                  HasSubstr("tiny_classifier.pt': loss 'hinge' is not one of mse, cross_entropy, next_token (--loss")));
  options = {};
  options.loss = "next_token";
  EXPECT_THAT([&] { buildModel(kTinyClassifier, options); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("next_token needs token ids of at least 2 per sample")));
  options = {};
  options.inputDtype = "long";
  EXPECT_THAT([&] { buildModel(kTinyClassifier, options); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("token ids (input dtype long) need a vocabulary size")));
  options = {};
  options.loss = "cross_entropy";
  EXPECT_THAT([&] { buildModel("mlp", options); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'mlp' is a zoo model with its own")));
  options.numClasses = 7;  // the classifier's output has 5
  const Model wrong = buildModel(kTinyClassifier, options);
  EXPECT_THAT(
      [&] {
        wrong.loss(torch::zeros({2, 5}), torch::zeros({2}, torch::kLong));
      },
      ThrowsMessage<std::invalid_argument>(
          HasSubstr("cross_entropy with 7 classes needs the model's output as [batch, 7], got [2, 5]")));
}

}  // namespace
}  // namespace pipeprof
