// Tests for split_backward.cpp: I then W compute what one backward computes, each its own part.
#include "stage/split_backward.h"
#include "stage/stage_input.h"

#include <pipeprof/runtime/memory_tracker.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace pipeprof {
namespace {

using test::close;

struct Whole {
  torch::Tensor inputGrad;
  std::vector<torch::Tensor> grads;
};

/// One backward of `model` on a copy of `input` that requires grad.
Whole wholeBackward(torch::nn::Sequential model, const torch::Tensor& input, const torch::Tensor& outputGrad) {
  torch::Tensor leaf = input.clone().requires_grad_();
  model->forward(leaf).backward(outputGrad);
  Whole whole{leaf.grad(), {}};
  for (const auto& parameter : model->parameters()) whole.grads.push_back(parameter.grad().clone());
  model->zero_grad();
  return whole;
}

torch::nn::Sequential mlp() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(6, 5), torch::nn::ReLU(), torch::nn::Linear(5, 4), torch::nn::Tanh());
}

TEST(SplitBackward, IMakesTheInputsGradientAndWTheWeightsAsOneBackwardDoes) {
  torch::nn::Sequential model = mlp();
  const torch::Tensor input = torch::randn({3, 6});
  const torch::Tensor outputGrad = torch::randn({3, 4});
  const Whole expected = wholeBackward(model, input, outputGrad);

  const StageInput stageInput = stageInputOf(input, true);
  const torch::Tensor output = model->forward(stageInput.tensor);
  WeightBackward weights;
  const std::vector<torch::Tensor> inputGrads = weights.runInputs({output}, {outputGrad}, {stageInput.gradientEdge()});
  ASSERT_EQ(inputGrads.size(), 1u);
  EXPECT_TRUE(close(inputGrads[0], expected.inputGrad));
  for (const auto& parameter : model->parameters()) {  // zero_grad() left zeros; I leaves them so
    EXPECT_TRUE(!parameter.grad().defined() || parameter.grad().abs().sum().item<double>() == 0.0);
  }
  weights.runWeights();
  const auto parameters = model->parameters();
  for (std::size_t k = 0; k < parameters.size(); ++k) EXPECT_TRUE(close(parameters[k].grad(), expected.grads[k])) << k;
}

// A concatenation's backward hands each input a slice of one gradient; I gives each its own
// storage, as a full backward's accumulation does, so a skip's gradient held for its stash stage
// does not keep the whole concatenation's alive.
TEST(SplitBackward, EachInputsGradientHasStorageOfItsOwn) {
  torch::manual_seed(5);
  torch::nn::Linear linear(6, 4);
  const StageInput skip = stageInputOf(torch::randn({3, 2}), true);
  const StageInput input = stageInputOf(torch::randn({3, 4}), true);
  const torch::Tensor output = linear(torch::cat({input.tensor, skip.tensor}, 1));
  const torch::Tensor outputGrad = torch::randn({3, 4});
  WeightBackward weights;
  const std::vector<torch::Tensor> grads =
      weights.runInputs({output}, {outputGrad}, {input.gradientEdge(), skip.gradientEdge()});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[1].storage().nbytes(), 3u * 2u * sizeof(float)) << "the skip's 3 x 2, not the concatenation's 3 x 6";
  EXPECT_EQ(grads[0].storage().nbytes(), 3u * 4u * sizeof(float));
  const torch::Tensor whole = torch::mm(outputGrad, linear->weight);
  EXPECT_TRUE(close(grads[0], whole.narrow(1, 0, 4)));
  EXPECT_TRUE(close(grads[1], whole.narrow(1, 4, 2)));
}

// A whole backward ends in the stage inputs' sinks, which copy such a slice as I does (and as a
// leaf's AccumulateGrad does): unet's stage opening with a concatenation held 1.5 MiB, not 1 MiB,
// for its input's gradient until the stage before used it.
TEST(SplitBackward, AWholeBackwardGivesEachInputsGradientStorageOfItsOwn) {
  torch::manual_seed(6);
  torch::nn::Linear linear(6, 4);
  const StageInput skip = stageInputOf(torch::randn({3, 2}), true);
  const StageInput input = stageInputOf(torch::randn({3, 4}), true);
  const torch::Tensor output = linear(torch::cat({input.tensor, skip.tensor}, 1));
  const torch::Tensor outputGrad = torch::randn({3, 4});
  torch::autograd::backward({output}, {outputGrad});
  EXPECT_EQ(input.grad().storage().nbytes(), 3u * 4u * sizeof(float)) << "the input's 3 x 4, not the 3 x 6";
  EXPECT_EQ(skip.grad().storage().nbytes(), 3u * 2u * sizeof(float));
  const torch::Tensor whole = torch::mm(outputGrad, linear->weight);
  EXPECT_TRUE(close(input.grad(), whole.narrow(1, 0, 4)));
  EXPECT_TRUE(close(skip.grad(), whole.narrow(1, 4, 2)));
}

TEST(SplitBackward, AStageWhoseInputWantsNoGradientRunsItAllInW) {
  torch::nn::Sequential model = mlp();
  const torch::Tensor input = torch::randn({3, 6});
  const torch::Tensor outputGrad = torch::randn({3, 4});
  const Whole expected = wholeBackward(model, input, outputGrad);
  const StageInput stageInput = stageInputOf(input, false);
  WeightBackward weights;
  const auto inputGrads =
      weights.runInputs({model->forward(stageInput.tensor)}, {outputGrad}, {stageInput.gradientEdge()});
  EXPECT_FALSE(inputGrads.at(0).defined());
  weights.runWeights();
  const auto parameters = model->parameters();
  for (std::size_t k = 0; k < parameters.size(); ++k) EXPECT_TRUE(close(parameters[k].grad(), expected.grads[k])) << k;
}

TEST(SplitBackward, AWeightUsedTwiceGetsBothGradients) {
  torch::manual_seed(5);
  torch::nn::Linear shared(4, 4);
  torch::nn::Sequential model(shared, torch::nn::ReLU(), shared);
  const torch::Tensor input = torch::randn({2, 4});
  const torch::Tensor outputGrad = torch::randn({2, 4});
  const Whole expected = wholeBackward(model, input, outputGrad);
  const StageInput stageInput = stageInputOf(input, true);
  WeightBackward weights;
  const auto inputGrads =
      weights.runInputs({model->forward(stageInput.tensor)}, {outputGrad}, {stageInput.gradientEdge()});
  EXPECT_TRUE(close(inputGrads.at(0), expected.inputGrad));
  weights.runWeights();
  EXPECT_TRUE(close(shared->weight.grad(), expected.grads[0]));
  EXPECT_TRUE(close(shared->bias.grad(), expected.grads[1]));
}

TEST(SplitBackward, IFreesWhatOnlyTheInputsGradientNeeded) {
  // Tanh saves its output for I alone; the Linear before it saves its input for W.
  torch::manual_seed(6);
  torch::nn::Sequential model(torch::nn::Linear(256, 256), torch::nn::Tanh());
  const StageInput stageInput = stageInputOf(torch::randn({64, 256}), true);
  torch::Tensor output = model->forward(stageInput.tensor);
  const torch::Tensor outputGrad = torch::ones_like(output);
  const torch::Tensor tanhSaved = output;  // Tanh saved its result: its storage has a second owner
  ASSERT_EQ(tanhSaved.storage().use_count(), 2);
  WeightBackward weights;
  weights.runInputs({output}, {outputGrad}, {stageInput.gradientEdge()});
  output = torch::Tensor();
  // Only this test's handle keeps Tanh's saved output now: I released the node's copy.
  EXPECT_EQ(tanhSaved.storage().use_count(), 1);
  weights.runWeights();
  EXPECT_TRUE(model->parameters()[0].grad().defined());
}

// The Linear after a concatenation saves the concatenation for W, and a saved tensor keeps its
// grad_fn: before I cut the edges of its own nodes, the concatenation's node kept the popped
// skip's AccumulateGrad, and so the skip (stage j - 1's tensor) alive until W ended.
TEST(SplitBackward, IReleasesTheInputsLeavesThatOnlyItsOwnNodesReached) {
  torch::manual_seed(7);
  torch::nn::Linear first(4, 4);
  torch::nn::Linear after(6, 3);
  const torch::Tensor skip = torch::randn({5, 2}).requires_grad_();  // a popped skip: a leaf (leafOf)
  const StageInput input = stageInputOf(torch::randn({5, 4}), true);
  torch::Tensor output = after(torch::cat({torch::relu(first(input.tensor)), skip}, 1));
  const torch::Tensor outputGrad = torch::randn({5, 3});
  torch::Tensor expected;
  {
    torch::Tensor whole = torch::autograd::grad({output}, {after->weight}, {outputGrad}, /*retain_graph=*/true)[0];
    expected = whole.clone();
  }
  WeightBackward weights;
  weights.runInputs({output}, {outputGrad}, {input.gradientEdge(), torch::autograd::impl::gradient_edge(skip)});
  output = torch::Tensor();
  // Nothing but this test holds the skip: its AccumulateGrad (which holds it) is gone.
  EXPECT_EQ(torch::autograd::impl::try_get_grad_accumulator(skip), nullptr) << "the skip is held until W";
  EXPECT_EQ(skip.use_count(), 1);
  weights.runWeights();
  EXPECT_TRUE(close(after->weight.grad(), expected));
  EXPECT_TRUE(first->weight.grad().defined());
}

// A concatenation inside the stage (unet's dec0_concat) whose second part is a popped skip: I
// gives both parts copies of their own as the concatenation's node returns them, so the whole
// goes then, not when the engine hands back what it captured (unet batch 16 zb1p [11,8]: 1.5 MiB
// over the predicted peak).
TEST(SplitBackward, IFreesAConcatenationsGradientOnceItsPartsAreUsed) {
  constexpr std::int64_t kTag = 11;
  constexpr Bytes kFloat = sizeof(float);
  installMemoryTracker();
  torch::manual_seed(8);
  torch::nn::Linear first(torch::nn::LinearOptions(256, 256).bias(false));
  torch::nn::Linear after(torch::nn::LinearOptions(768, 64).bias(false));
  const torch::Tensor skip = torch::randn({64, 512}).requires_grad_();  // a popped skip: a leaf
  const StageInput input = stageInputOf(torch::randn({64, 256}), true);
  const torch::Tensor output = after(torch::cat({torch::relu(first(input.tensor)), skip}, 1));
  const torch::Tensor outputGrad = torch::randn({64, 64});
  WeightBackward weights;
  std::vector<torch::Tensor> grads;
  resetPeakBytes(kTag);
  const Bytes before = liveBytes(kTag);
  {
    ScopedAllocationTag tag(kTag);
    grads =
        weights.runInputs({output}, {outputGrad}, {input.gradientEdge(), torch::autograd::impl::gradient_edge(skip)});
  }
  // At most the concatenation's gradient and its parts' copies (384 KiB). Holding the whole until
  // I ends reached it with the ReLU's and the first layer's input gradients and the skip's copy
  // (448 KiB).
  const Bytes whole = 64 * 768 * kFloat;
  const Bytes skipCopy = 64 * 512 * kFloat;
  EXPECT_LE(peakBytes(kTag) - before, 2 * whole);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[1].storage().nbytes(), static_cast<std::size_t>(skipCopy));
  const torch::Tensor wholeGrad = torch::mm(outputGrad, after->weight);
  EXPECT_TRUE(close(grads[1], wholeGrad.narrow(1, 256, 512)));
}

// The layer profiler runs a popping layer's I alone, its skip wanting no gradient: a
// concatenation's backward still slices it (one output for all its inputs), and I leaves that
// slice to the engine, which drops it, rather than copying it (the profile's I workspace is the
// stage's without the skip's copy, which the simulator adds where a stage pops it).
TEST(SplitBackward, ISlicesForNoInputAreNotCopied) {
  constexpr std::int64_t kTag = 12;
  constexpr Bytes kFloat = sizeof(float);
  installMemoryTracker();
  torch::manual_seed(10);
  torch::nn::Linear after(torch::nn::LinearOptions(768, 64).bias(false));
  const torch::Tensor skip = torch::randn({64, 512}).requires_grad_();
  const StageInput input = stageInputOf(torch::randn({64, 256}), true);
  const torch::Tensor output = after(torch::cat({input.tensor, skip}, 1));
  const torch::Tensor outputGrad = torch::randn({64, 64});
  WeightBackward weights;
  resetPeakBytes(kTag);
  const Bytes before = liveBytes(kTag);
  {
    ScopedAllocationTag tag(kTag);
    weights.runInputs({output}, {outputGrad}, {input.gradientEdge()});
  }
  // The concatenation's gradient and the input's copy; the skip's would add 128 KiB.
  EXPECT_LE(peakBytes(kTag) - before, 64 * 768 * kFloat + 64 * 256 * kFloat);
}

}  // namespace
}  // namespace pipeprof
