// Tests for StepBoundary (layer_profiling/step_boundary.h): the step's end and beginning around
// each timed pass of the layer profiler.
#include "layer_profiling/step_boundary.h"

#include <gtest/gtest.h>

namespace pipeprof::layer_profiling {
namespace {

OptimizerSpec momentum() {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::Momentum;
  spec.learningRate = 0.5;  // the boundary steps with 0 whatever the spec's
  return spec;
}

/// The momentum buffer the optimizer keeps for `p`, found by its shape (the tests' parameters
/// differ in shape; LibTorch 1.13 keys the state by a string, 2.x by a pointer), undefined
/// before its first step.
torch::Tensor momentumBuffer(const torch::optim::Optimizer& optimizer, const torch::Tensor& p) {
  for (const auto& entry : optimizer.state()) {
    const torch::Tensor& buffer = static_cast<const torch::optim::SGDParamState&>(*entry.second).momentum_buffer();
    if (buffer.defined() && buffer.sizes() == p.sizes()) return buffer;
  }
  return {};
}

TEST(StepBoundary, StepsTheOptimizerWithoutMovingTheWeightsAndZeroesTheGradientsInPlace) {
  torch::nn::AnyModule first(torch::nn::Linear(4, 3));
  torch::nn::AnyModule second(torch::nn::Linear(3, 2));
  Layers layers;
  layers.modules = {&first, &second};
  const torch::Tensor weight = first.ptr()->parameters().front();
  const torch::Tensor before = weight.detach().clone();

  const StepBoundary step(layers, momentum(), torch::kCPU);
  ASSERT_NE(step.optimizer(), nullptr);
  ASSERT_TRUE(weight.grad().defined()) << "a missing gradient is made zeros, as after a step";
  EXPECT_TRUE(momentumBuffer(*step.optimizer(), weight).defined()) << "the first step, at construction, made the state";

  weight.mutable_grad().fill_(1.0);
  const void* gradient = weight.grad().data_ptr();
  step.end();
  EXPECT_TRUE(torch::equal(momentumBuffer(*step.optimizer(), weight), torch::ones_like(weight)))
      << "the step ran on the gradient";
  EXPECT_TRUE(torch::equal(weight, before)) << "at a learning rate of 0";

  step.begin();
  EXPECT_EQ(weight.grad().data_ptr(), gradient) << "zeroed in place";
  EXPECT_TRUE(torch::equal(weight.grad(), torch::zeros_like(weight)));
}

TEST(StepBoundary, StepsEachParameterOnceAndOnlyTheLayersThePassesRun) {
  torch::nn::Linear tied(4, 4);
  torch::nn::AnyModule a(tied);
  torch::nn::AnyModule b(tied);  // the same weight in two layers, as tied embeddings
  torch::nn::AnyModule leftOut(torch::nn::Linear(4, 4));
  Layers layers;
  layers.modules = {&a, &b, &leftOut};
  layers.sameAs = {0, 1, 1};  // the third takes the second's figures and never runs
  const StepBoundary step(layers, momentum(), torch::kCPU);
  ASSERT_NE(step.optimizer(), nullptr);
  EXPECT_EQ(step.optimizer()->param_groups().front().params().size(), 2U) << "the tied weight and bias once";
  EXPECT_FALSE(leftOut.ptr()->parameters().front().grad().defined());
}

TEST(StepBoundary, LayersWithoutTrainableParametersHaveNothingToStep) {
  torch::nn::AnyModule relu(torch::nn::ReLU{});
  torch::nn::Linear frozen(2, 2);
  for (torch::Tensor& p : frozen->parameters()) p.set_requires_grad(false);
  torch::nn::AnyModule still(frozen);
  Layers layers;
  layers.modules = {&relu, &still};
  const StepBoundary step(layers, momentum(), torch::kCPU);
  EXPECT_EQ(step.optimizer(), nullptr);
  step.begin();
  step.end();
}

}  // namespace
}  // namespace pipeprof::layer_profiling
