// Tests for slice_hooks.cpp: a whole backward gives the parts of a concatenation's gradient bound
// for a stage's inputs storage of their own as the concatenation's node returns them.
#include "stage/graph_walk.h"
#include "stage/slice_hooks.h"
#include "stage/stage_input.h"

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/torch.h>

#include <memory>

namespace pipeprof {
namespace {

/// Records whether the gradient a node gets is a tensor of its own (not a slice of a larger one).
struct OwnGradientProbe : torch::autograd::FunctionPreHook {
  explicit OwnGradientProbe(bool* own) : own_(own) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    const torch::Tensor& grad = grads.at(0);
    *own_ =
        grad.is_contiguous() && grad.storage().nbytes() == static_cast<std::size_t>(grad.numel()) * grad.element_size();
    return grads;
  }
  bool* own_;
};

struct Concatenation {
  torch::nn::Linear first{torch::nn::LinearOptions(8, 4).bias(false)};
  torch::nn::Linear after{torch::nn::LinearOptions(6, 3).bias(false)};
  torch::Tensor skip = torch::randn({5, 2}).requires_grad_();  // a popped skip: a leaf
  StageInput input = stageInputOf(torch::randn({5, 8}), true);
  torch::Tensor hidden;
  torch::Tensor output;

  Concatenation() {
    hidden = torch::relu(first(input.tensor));
    output = after(torch::cat({hidden, skip}, 1));
  }
  torch::autograd::edge_list ends() const { return {input.gradientEdge(), torch::autograd::impl::gradient_edge(skip)}; }
};

// Inside a stage the part for the layer before (unet's upsampling) arrives as a slice: that layer
// would hold the whole gradient while it runs and copy its part itself.
TEST(SliceHooks, TheLayerBeforeAConcatenationGetsAGradientOfItsOwn) {
  torch::manual_seed(9);
  Concatenation model;
  const torch::Tensor outputGrad = torch::randn({5, 3});
  bool own = false;
  model.hidden.grad_fn()->add_pre_hook(std::make_unique<OwnGradientProbe>(&own));
  {
    const auto targets = nodesOf(model.ends());
    const SliceHooks slices(reachingNodes(gradientEdgesOf({model.output}), targets), targets);
    torch::autograd::backward({model.output}, {outputGrad});
  }
  EXPECT_TRUE(own) << "the ReLU got a slice of the concatenation's gradient";
  const torch::Tensor whole = torch::mm(outputGrad, model.after->weight);
  EXPECT_TRUE(test::close(model.skip.grad(), whole.narrow(1, 4, 2)));
  EXPECT_EQ(model.first->weight.grad().sizes(), model.first->weight.sizes());
}

TEST(SliceHooks, WithoutThemTheLayerBeforeGetsASlice) {  // what the test above guards against
  torch::manual_seed(9);
  Concatenation model;
  bool own = true;
  model.hidden.grad_fn()->add_pre_hook(std::make_unique<OwnGradientProbe>(&own));
  torch::autograd::backward({model.output}, {torch::randn({5, 3})});
  EXPECT_FALSE(own);
}

// Removed with the object: a graph kept for another backward runs without them.
TEST(SliceHooks, GoWithTheObject) {
  torch::manual_seed(9);
  Concatenation model;
  const auto targets = nodesOf(model.ends());
  const Reachability walk = reachingNodes(gradientEdgesOf({model.output}), targets);
  auto hooks = [&] {
    std::size_t count = 0;
    for (torch::autograd::Node* node : walk.order) count += node->post_hooks().size();
    return count;
  };
  {
    const SliceHooks slices(walk, targets);
    EXPECT_GT(hooks(), 0u);
  }
  EXPECT_EQ(hooks(), 0u);
}

}  // namespace
}  // namespace pipeprof
