// Tests for skip_gradient_profiler.cpp: what a popping layer's backward hands a skip, and the
// times of the popping layers it runs as a timed pass does.
#include "layer_profiling/skip_gradient_profiler.h"

#include "skip_test_layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof::layer_profiling {
namespace {

using test::PopAdd;
using test::Stash;

struct StashLinearPop {
  torch::nn::Sequential sequential;
  Layers layers;

  StashLinearPop() {
    sequential->push_back("stash", Stash());
    sequential->push_back("fc", torch::nn::Linear(8, 8));
    sequential->push_back("pop", PopAdd());
    for (auto& layer : *sequential) layers.modules.push_back(&layer);
    layers.names = {"stash", "fc", "pop"};
  }
};

TEST(SkipGradientProfiler, AnAddHandsTheSkipTheGradientItHandsItsInput) {
  StashLinearPop model;
  const Tensors input{torch::randn({4, 8})};
  const auto whole = skipGradientFacts(model.layers, input, Precision::Fp32, ProbedBackward::Whole);
  const auto split = skipGradientFacts(model.layers, input, Precision::Fp32, ProbedBackward::Input);
  const ProfilerSkipTracker::LayerAndName skip{0, "skip"};
  ASSERT_EQ(split.count(skip), 1u);
  EXPECT_TRUE(split.at(skip).sharedWithInput);
  EXPECT_FALSE(split.at(skip).sliceOfOutput);
  ASSERT_EQ(whole.count(skip), 1u);
  EXPECT_FALSE(whole.at(skip).sharedWithInput) << "fp32: autograd accumulates a copy into the skip's leaf";
}

TEST(SkipGradientProfiler, TimesThePoppingLayersWholeBackwardAndNoOtherLayer) {
  // The memory passes do not time a layer that pops a skip (its skip needs no gradient there);
  // the whole backward's probe, which runs it as a timed pass does, gives it one run. The I
  // probe asks I for the skip's gradient, which a split timed pass leaves to W: it times nothing.
  StashLinearPop model;
  const Tensors input{torch::randn({4, 8})};
  TimeSamples times(3);
  times.popsASkip[2] = true;
  skipGradientFacts(model.layers, input, Precision::Fp32, ProbedBackward::Input, &times);
  skipGradientFacts(model.layers, input, Precision::Fp32, ProbedBackward::Whole, &times);
  for (std::size_t L = 0; L < 2; ++L) {
    EXPECT_TRUE(times.forwardNs[L].empty() && times.backwardNs[L].empty() && times.inputNs[L].empty() &&
                times.weightNs[L].empty())
        << "layer " << L << " is the memory passes' to time";
  }
  EXPECT_TRUE(times.forwardNs[2].empty()) << "the memory passes time its forward";
  EXPECT_EQ(times.backwardNs[2].size(), 1u);
  EXPECT_TRUE(times.inputNs[2].empty());
  EXPECT_TRUE(times.weightNs[2].empty());
  EXPECT_GT(times.backwardNs[2].front(), 0);
  EXPECT_EQ(times.wholeRuns(), 0) << "layers 0 and 1 have no run yet";
}

TEST(TimeSamples, ARunOfTheModelIsOneOfEveryLayer) {
  TimeSamples times(2);
  EXPECT_EQ(times.wholeRuns(), 0);
  EXPECT_EQ(times.splitRuns(), 0);
  for (std::size_t L = 0; L < 2; ++L) {
    times.forwardNs[L] = {1, 2};
    times.backwardNs[L] = {1, 2};
    times.inputNs[L] = {1};
    times.weightNs[L] = {1};
  }
  times.backwardNs[1] = {1};
  EXPECT_EQ(times.wholeRuns(), 1) << "layer 1 has one whole backward";
  times.lossForwardNs = {5, 6, 7};
  EXPECT_EQ(times.wholeRuns(), 1) << "the loss's runs are its loss passes'";
  EXPECT_EQ(times.splitRuns(), 1);
  times.weightNs[0].clear();
  EXPECT_EQ(times.splitRuns(), 0);
  EXPECT_EQ(times.layersShortOf(1, true), (std::vector<bool>{true, false}));
  EXPECT_EQ(times.layersShortOf(2, false), (std::vector<bool>{false, true}));
}

}  // namespace
}  // namespace pipeprof::layer_profiling
