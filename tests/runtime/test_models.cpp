// Tests for the model zoo: named flat Sequentials, deterministic builds and batches, one step.
#include <pipeprof/runtime/models.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

namespace pipeprof {
namespace {

using test::sized;

bool sameParameters(const torch::nn::Sequential& a, const torch::nn::Sequential& b) {
  auto pa = a->parameters();
  auto pb = b->parameters();
  if (pa.size() != pb.size()) {
    return false;
  }
  for (std::size_t k = 0; k < pa.size(); ++k) {
    if (!torch::equal(pa[k], pb[k])) {
      return false;
    }
  }
  return true;
}

TEST(Models, ZooListsMlpFirst) {
  auto models = zooModels();
  ASSERT_FALSE(models.empty());
  EXPECT_EQ(models.front().name, "mlp");
}

TEST(Models, MlpHasNamedLinearAndReluLayers) {
  Model model = buildModel("mlp", sized(/*width=*/16, /*depth=*/3, /*seed=*/1));
  EXPECT_EQ(model.name, "mlp");
  auto named = model.sequential->named_children();
  ASSERT_EQ(named.size(), 5U);
  EXPECT_EQ(named[0].key(), "fc0");
  EXPECT_EQ(named[1].key(), "relu0");
  EXPECT_EQ(named[4].key(), "fc2");
  EXPECT_TRUE(model.skips.empty());
  Batch batch = model.makeBatch(4, 7);
  EXPECT_EQ(batch.input.sizes(), (std::vector<std::int64_t>{4, 16}));
  auto loss = model.loss(model.sequential->forward(batch.input), batch.target);
  loss.backward();
  EXPECT_EQ(loss.dim(), 0);
  for (const auto& p : model.sequential->parameters()) {
    EXPECT_TRUE(p.grad().defined());
  }
}

TEST(Models, SameSeedSameParametersAndBatches) {
  Model a = buildModel("mlp", sized(8, 2, 3));
  Model b = buildModel("mlp", sized(8, 2, 3));
  Model c = buildModel("mlp", sized(8, 2, 4));
  EXPECT_TRUE(sameParameters(a.sequential, b.sequential));
  EXPECT_FALSE(sameParameters(a.sequential, c.sequential));
  EXPECT_TRUE(torch::equal(a.makeBatch(3, 5).input, b.makeBatch(3, 5).input));
  EXPECT_FALSE(torch::equal(a.makeBatch(3, 5).input, a.makeBatch(3, 6).input));
}

TEST(Models, BuildingDoesNotDisturbTheGlobalGenerator) {
  torch::manual_seed(42);
  auto expected = torch::rand({4});
  torch::manual_seed(42);
  buildModel("mlp", sized(8, 2, 9));
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

TEST(Models, UnknownNameListsTheKnownOnes) {
  try {
    buildModel("nope");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'nope' (known: mlp"), std::string::npos) << e.what();
  }
  EXPECT_THROW(buildModel("mlp", sized(-1, 0, 0)), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
