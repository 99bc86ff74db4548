// Tests for the zoo models and TorchScript loading: each Pipe equals its unpartitioned form.
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

using test::close;
using test::pipeOptions;
using test::sized;

struct ZooCase {
  std::string name;
  ModelOptions options;
  std::vector<std::int64_t> balance;  ///< partitions of the small model
};

/// A small version of each model, split into three partitions (skips cross partitions).
std::vector<ZooCase> zooCases() {
  return {
      {"mlp", sized(16, 3, 1), {2, 2, 1}},
      {"resnet", sized(8, 2, 1), {5, 12, 9}},
      {"unet", sized(4, 2, 1), {3, 10, 6}},
      {"gpt", sized(32, 2, 1), {1, 2, 2}},
  };
}

TEST(ZooPipe, EveryZooModelIsListedAndHasNamedLayersAndRoutes) {
  std::vector<std::string> names;
  for (const auto& info : zooModels()) {
    names.push_back(info.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"mlp", "resnet", "unet", "gpt"}));
  Model resnet = buildModel("resnet", sized(8, 2, 1));
  EXPECT_EQ(resnet.sequential->size(), 26U);
  ASSERT_EQ(resnet.skips.size(), 2U);
  EXPECT_EQ(resnet.skips[0].name, "residual0");
  EXPECT_EQ(resnet.skips[0].stashLayer, 3);
  EXPECT_EQ(resnet.skips[0].popLayer, 12);
  Model unet = buildModel("unet", sized(4, 2, 1));
  ASSERT_EQ(unet.skips.size(), 2U);
  EXPECT_EQ(unet.skips[1].name, "skip1");
  EXPECT_EQ(unet.sequential->named_children()[0].key(), "enc0_conv");
}

TEST(ZooPipe, EachModelEqualsItsUnpartitionedForm) {
  for (const ZooCase& c : zooCases()) {
    SCOPED_TRACE(c.name);
    Model reference = buildModel(c.name, c.options);
    Model partitioned = buildModel(c.name, c.options);
    Batch batch = reference.makeBatch(4, 3);
    reference.loss(reference.sequential->forward(batch.input), batch.target).backward();
    PipeOptions options;
    options.chunks = 2;
    options.checkpoint = Checkpoint::ExceptLast;
    Pipe pipe(partitioned.sequential, c.balance, options);
    torch::Tensor output = pipe.forward(batch.input);
    torch::Tensor expected;
    {
      torch::NoGradGuard noGrad;
      reference.sequential->eval();
      partitioned.sequential->eval();
      expected = reference.sequential->forward(batch.input);
      reference.sequential->train();
      partitioned.sequential->train();
    }
    partitioned.loss(output, batch.target).backward();
    auto expectedParameters = reference.sequential->named_parameters();
    auto actualParameters = partitioned.sequential->named_parameters();
    ASSERT_EQ(expectedParameters.size(), actualParameters.size());
    for (const auto& item : expectedParameters) {
      SCOPED_TRACE(item.key());
      const torch::Tensor& actual = actualParameters[item.key()];
      // Batch norm normalises each micro-batch by its own statistics: compare models without
      // BatchNorm exactly, and the others (resnet) only in shape.
      if (c.name == "resnet") {
        ASSERT_EQ(actual.grad().sizes(), item.value().grad().sizes());
      } else {
        ASSERT_TRUE(torch::allclose(actual.grad(), item.value().grad(), 1e-4, 1e-5));
      }
    }
  }
}

TEST(ZooPipe, ResnetEqualsItsUnpartitionedFormInEval) {
  Model reference = buildModel("resnet", sized(8, 2, 1));
  Model partitioned = buildModel("resnet", sized(8, 2, 1));
  reference.sequential->eval();
  Pipe pipe(partitioned.sequential, {5, 12, 9}, pipeOptions({}, 3, Checkpoint::Always, false));
  pipe.eval();
  Batch batch = reference.makeBatch(5, 2);
  torch::Tensor input = batch.input.clone().requires_grad_(true);
  torch::Tensor referenceInput = batch.input.clone().requires_grad_(true);
  reference.loss(reference.sequential->forward(referenceInput), batch.target).backward();
  torch::Tensor output = pipe.forward(input);
  partitioned.loss(output, batch.target).backward();
  EXPECT_TRUE(torch::allclose(input.grad(), referenceInput.grad(), 1e-4, 1e-6));
  auto expected = reference.sequential->parameters();
  auto actual = pipe.parameters();
  for (std::size_t k = 0; k < actual.size(); ++k) {
    ASSERT_TRUE(torch::allclose(actual[k].grad(), expected[k].grad(), 1e-4, 1e-5)) << k;
  }
}

const std::string kFixture = test::fixturePath("tiny_sequential.pt");

TEST(ZooPipe, LoadsATorchScriptSequential) {
  Model model = buildModel(kFixture);
  auto named = model.sequential->named_children();
  ASSERT_EQ(named.size(), 3U);
  EXPECT_EQ(named[0].key(), "0");
  EXPECT_EQ(model.sequential->parameters().size(), 4U);
  Batch batch = model.makeBatch(3, 1);
  EXPECT_EQ(batch.input.sizes(), (std::vector<std::int64_t>{3, 6}));  // pipeprof_input_shape
  // The value printed by make_tiny_sequential.py for this input.
  const torch::Tensor x = torch::arange(12, torch::kFloat32).reshape({2, 6}) / 10;
  EXPECT_NEAR(model.sequential->forward(x).sum().item<double>(), 0.06614942848682404, 1e-6);

  Model reference = buildModel(kFixture);
  reference.loss(reference.sequential->forward(x), batch.target).backward();
  Pipe pipe(model.sequential, {1, 2}, pipeOptions({}, 2, Checkpoint::Always, false));
  model.loss(pipe.forward(x), batch.target).backward();
  auto expected = reference.sequential->parameters();
  auto actual = pipe.parameters();
  for (std::size_t k = 0; k < actual.size(); ++k) {
    EXPECT_TRUE(close(actual[k].grad(), expected[k].grad())) << k;
  }
}

TEST(ZooPipe, TorchScriptErrorsNameTheFile) {
  EXPECT_THROW(buildModel("/nonexistent/model.pt"), std::invalid_argument);
  ModelOptions options;
  options.inputShape = {2, 3};
  EXPECT_EQ(buildModel(kFixture, options).makeBatch(1, 0).input.sizes(), (std::vector<std::int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace pipeprof
