// Tests for identical_layers.h: which layers run alike, when the profile leaves them out, and
// what a left-out layer takes of its twin's figures.
#include "layer_profiling/identical_layers.h"

#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/skip.h>

#include <gtest/gtest.h>

#include <vector>

namespace pipeprof::layer_profiling {
namespace {

std::vector<std::int64_t> sameAsIn(Model& model, std::int64_t batch) {
  const Layers layers = layersOf(model);
  const Tensors input{model.makeBatch(batch, 0).input};
  return findIdenticalLayers(layers, model.sequential, input, torch::kCPU, Precision::Fp32).sameAs;
}

TEST(IdenticalLayers, TheMlpsInnerLinearsAndReLUsRunAlikeButNotItsFirstAndLast) {
  ModelOptions options;
  options.width = 16;
  options.depth = 4;  // fc0 relu0 fc1 relu1 fc2 relu2 fc3
  Model model = buildModel("mlp", options);
  EXPECT_EQ(sameAsIn(model, 4), (std::vector<std::int64_t>{0, 1, 2, 1, 2, 1, 6}));
}

TEST(IdenticalLayers, EveryGptBlockTakesTheFirstBlocksFigures) {
  ModelOptions options;
  options.width = 32;
  options.depth = 3;  // embed block0 block1 block2 norm head
  options.tieEmbeddings = true;
  Model model = buildModel("gpt", options);
  EXPECT_EQ(sameAsIn(model, 2), (std::vector<std::int64_t>{0, 1, 1, 1, 4, 5}));
}

TEST(IdenticalLayers, SkipLayersFunctionalsAndShapeChangesAreNeverShared) {
  ModelOptions options;
  options.width = 8;
  options.depth = 2;
  Model resnet = buildModel("resnet", options);
  const std::vector<std::int64_t> sameAs = sameAsIn(resnet, 2);
  const Layers layers = layersOf(resnet);
  for (std::size_t L = 0; L < sameAs.size(); ++L) {
    if (dynamic_cast<Skippable*>(layers.modules[L]->ptr().get()) != nullptr) {
      EXPECT_EQ(sameAs[L], static_cast<std::int64_t>(L)) << layers.names[L];
    }
  }

  Model model;
  model.sequential = torch::nn::Sequential();
  model.sequential->push_back("in", torch::nn::Linear(8, 8));
  model.sequential->push_back("relu", torch::nn::Functional(torch::relu));
  model.sequential->push_back("tanh", torch::nn::Functional(torch::tanh));
  model.sequential->push_back("a", torch::nn::Linear(8, 16));
  model.sequential->push_back("b", torch::nn::Linear(16, 16));
  model.sequential->push_back("c", torch::nn::Linear(16, 16));
  model.sequential->push_back("out", torch::nn::Linear(16, 8));
  model.makeBatch = [](std::int64_t batch, std::int64_t) { return Batch{torch::randn({batch, 8}), {}}; };
  // The Functionals stay apart; a (8 -> 16) changes the shape; b and c are alike.
  EXPECT_EQ(sameAsIn(model, 2), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 4, 6}));
}

TEST(IdenticalLayers, LeftOutOnlyWhereEveryLayersMemoryPassesWouldOutlastTheBudget) {
  IdenticalLayers found;
  found.forwardSeconds = 0.1;  // at the smallest size, 8; sizes 8, 16, 32, 64: about 15 s of passes
  EXPECT_TRUE(memoryPassesOutlast(found, 8, 120, 10.0));
  EXPECT_FALSE(memoryPassesOutlast(found, 8, 120, 20.0));
  EXPECT_TRUE(memoryPassesOutlast(found, 8, 120, 0.0)) << "no budget: the least the profile can do";
}

TEST(IdenticalLayers, ALeftOutLayerTakesItsTwinsTimesAndBackwardButKeepsItsForwardBytes) {
  CostSample twin;
  twin.forwardNs = 100;
  twin.backwardNs = 200;
  twin.backwardWorkspaceBytes = 300;
  twin.innerBackwardWorkspaceBytes = 250;
  twin.backwardEndRiseBytes = 60;
  twin.inputEndRiseBytes = 50;
  twin.backwardSplit = BackwardSplit{80, 120, 40, 30};
  twin.outputBytes = 1000;
  twin.savedBytes = 2000;
  twin.forwardWorkspaceBytes = 3000;
  twin.outputSavedBytes = 1000;
  twin.savedFreedByNextBytes = 1000;
  CostSample own;
  own.outputBytes = 1001;
  own.savedBytes = 2001;
  own.forwardWorkspaceBytes = 3001;
  own.outputSavedBytes = 999;
  own.savedFreedByNextBytes = 0;
  std::vector<CostSample> costs{CostSample{}, twin, own};
  std::vector<Bytes> castCacheBytes{0, 64, 0};
  takeIdenticalFigures({0, 1, 1}, costs, castCacheBytes);
  const CostSample& taken = costs[2];
  EXPECT_EQ(taken.forwardNs, 100);
  EXPECT_EQ(taken.backwardNs, 200);
  EXPECT_EQ(taken.backwardWorkspaceBytes, 300);
  EXPECT_EQ(taken.innerBackwardWorkspaceBytes, 250);
  EXPECT_EQ(taken.backwardEndRiseBytes, 60);
  EXPECT_EQ(taken.inputEndRiseBytes, 50);
  ASSERT_TRUE(taken.backwardSplit);
  EXPECT_EQ(taken.backwardSplit->inputNs, 80);
  EXPECT_EQ(taken.outputBytes, 1001);
  EXPECT_EQ(taken.savedBytes, 2001);
  EXPECT_EQ(taken.forwardWorkspaceBytes, 3001);
  EXPECT_EQ(taken.outputSavedBytes, 999);
  EXPECT_EQ(taken.savedFreedByNextBytes, 0) << "measured by the forward, which every layer runs";
  EXPECT_EQ(castCacheBytes[2], 64);
  EXPECT_EQ(costs[1].forwardNs, 100) << "the twin keeps its own";
}

}  // namespace
}  // namespace pipeprof::layer_profiling
