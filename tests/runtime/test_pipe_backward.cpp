// Tests for the Pipe's autograd nodes: the hand-off / backward split, shared and partial gradients.
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace pipeprof {
namespace {

using test::close;
using test::linearTanh;
using test::pipeOptions;
using test::text;

using Outputs = std::vector<torch::Tensor>;
using Loss = std::function<torch::Tensor(const Outputs&)>;

/// Returns {tanh(x)} (the reference Sequential then returns a vector, as the Pipe does).
struct OneHeadImpl : torch::nn::Module {
  Outputs forward(const torch::Tensor& x) { return {x.tanh()}; }
};
TORCH_MODULE(OneHead);

/// Returns {x * 2, sin(x)}: the Pipe gets two outputs.
struct TwoHeadedImpl : torch::nn::Module {
  Outputs forward(const torch::Tensor& x) { return {x * 2, x.sin()}; }
};
TORCH_MODULE(TwoHeaded);

/// Returns {argmax(x) (integer, no gradient), x * 3}.
struct IndexAndValueImpl : torch::nn::Module {
  Outputs forward(const torch::Tensor& x) { return {x.argmax(1), x * 3}; }
};
TORCH_MODULE(IndexAndValue);

/// fc0, tanh1, fc2, then `head` (4 layers).
torch::nn::Sequential withHead(torch::nn::AnyModule head) {
  torch::nn::Sequential model = linearTanh(3, 17);
  model->push_back("head", std::move(head));
  return model;
}

struct Gradients {
  Outputs outputs;
  torch::Tensor input;
  Outputs parameters;
};

Gradients referenceGradients(const std::function<torch::nn::Sequential()>& build, const torch::Tensor& input,
                             const Loss& loss) {
  torch::nn::Sequential model = build();
  torch::Tensor leaf = input.clone().requires_grad_(true);
  Outputs outputs = model->forward<Outputs>(leaf);
  loss(outputs).backward();
  Gradients result{outputs, leaf.grad(), {}};
  for (const auto& parameter : model->parameters()) {
    result.parameters.push_back(parameter.grad());
  }
  return result;
}

/// The Pipe's gradients under `loss` equal the unpartitioned model's, for every balance given,
/// chunks 1 and 3 and every checkpoint mode.
void expectExactGradients(const std::function<torch::nn::Sequential()>& build, const Loss& loss,
                          const std::vector<std::vector<std::int64_t>>& balances) {
  torch::manual_seed(2);
  const torch::Tensor input = torch::randn({6, 8});
  const Gradients expected = referenceGradients(build, input, loss);
  for (const auto& balance : balances) {
    for (std::int64_t chunks : {1, 3}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE("balance " + text(balance) + " chunks " + std::to_string(chunks) + " mode " +
                     std::string(checkpointName(mode)));
        Pipe pipe(build(), balance, pipeOptions({}, chunks, mode, false));
        torch::Tensor leaf = input.clone().requires_grad_(true);
        Outputs outputs = pipe.forward(Outputs{leaf});
        ASSERT_EQ(outputs.size(), expected.outputs.size());
        for (std::size_t k = 0; k < outputs.size(); ++k) {
          ASSERT_TRUE(outputs[k].is_floating_point() ? close(outputs[k], expected.outputs[k])
                                                     : torch::equal(outputs[k], expected.outputs[k]))
              << k;
        }
        loss(outputs).backward();
        ASSERT_TRUE(close(leaf.grad(), expected.input));
        Outputs parameters = pipe.parameters();
        ASSERT_EQ(parameters.size(), expected.parameters.size());
        for (std::size_t k = 0; k < parameters.size(); ++k) {
          ASSERT_TRUE(close(parameters[k].grad(), expected.parameters[k])) << "parameter " << k;
        }
      }
    }
  }
}

TEST(PipeBackward, OutputsHandOffTheirGradientsToACpuNodeThatReturnsTheInputs) {
  Pipe pipe(withHead(torch::nn::AnyModule(TwoHeaded())), {2, 2}, pipeOptions({}, 2, Checkpoint::Never, false));
  torch::Tensor input = torch::randn({4, 8}).requires_grad_(true);
  Outputs outputs = pipe.forward(Outputs{input});
  ASSERT_EQ(outputs.size(), 2U);
  const auto handoff = outputs[0].grad_fn();
  ASSERT_TRUE(handoff);
  EXPECT_EQ(handoff->name(), "pipeprof::PipeGradientHandoff");
  EXPECT_EQ(outputs[1].grad_fn(), handoff);  // one hand-off for all outputs
  EXPECT_EQ(outputs[0].output_nr(), 0U);
  EXPECT_EQ(outputs[1].output_nr(), 1U);
  ASSERT_EQ(handoff->num_outputs(), 1U);  // the phony
  const auto& backward = handoff->next_edge(0).function;
  ASSERT_TRUE(backward);
  EXPECT_EQ(backward->name(), "pipeprof::PipeBackward");
  ASSERT_EQ(backward->num_inputs(), 1U);
  // A zero-size CPU input: autograd runs the blocking node on the thread that called backward().
  EXPECT_TRUE(backward->input_metadata(0).device().is_cpu());
  ASSERT_EQ(backward->num_outputs(), 1U);
  EXPECT_EQ(backward->next_edge(0).function, torch::autograd::impl::grad_accumulator(input));
}

TEST(PipeBackward, AGradientUsedTwiceIsSummedBeforeTheHandOff) {
  const Loss twice = [](const Outputs& outputs) { return (outputs[0] * 2).sum() + outputs[0].pow(2).sum(); };
  expectExactGradients([] { return withHead(torch::nn::AnyModule(OneHead())); }, twice, {{4}, {2, 2}, {1, 1, 2}});
}

TEST(PipeBackward, EitherOfTwoOutputsAloneGivesExactGradients) {
  const auto build = [] { return withHead(torch::nn::AnyModule(TwoHeaded())); };
  for (std::size_t used : {0U, 1U}) {
    SCOPED_TRACE("only output " + std::to_string(used));
    expectExactGradients(build, [used](const Outputs& outputs) { return outputs[used].pow(2).sum(); },
                         {{4}, {2, 2}, {1, 2, 1}});
  }
  expectExactGradients(build, [](const Outputs& outputs) { return outputs[0].sum() + outputs[1].pow(2).sum(); },
                       {{3, 1}});
}

TEST(PipeBackward, AnIntegerOutputBeforeAFloatOneDoesNotShiftTheGradients) {
  const auto build = [] { return withHead(torch::nn::AnyModule(IndexAndValue())); };
  expectExactGradients(build, [](const Outputs& outputs) { return outputs[1].pow(2).sum(); }, {{4}, {2, 2}});
}

TEST(PipeBackward, ARetainedGraphRefusesASecondBackwardAndThePipeStaysUsable) {
  torch::nn::Sequential reference = linearTanh(4, 5);
  const torch::Tensor input = torch::randn({4, 8});
  reference->forward(input).sum().backward();
  Pipe pipe(linearTanh(4, 5), {2, 2}, pipeOptions({}, 2, Checkpoint::ExceptLast, false));
  torch::Tensor loss = pipe.forward(input).sum();
  loss.backward({}, /*retain_graph=*/true);
  for (std::size_t k = 0; k < reference->parameters().size(); ++k) {
    EXPECT_TRUE(close(pipe.parameters()[k].grad(), reference->parameters()[k].grad())) << k;
  }
  try {
    loss.backward();
    FAIL() << "expected the second backward to throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the Pipe's backward already ran for this output; call forward again"),
              std::string::npos)
        << e.what();
  }
  for (auto parameter : pipe.parameters()) {
    parameter.mutable_grad() = torch::Tensor();
  }
  pipe.forward(input).sum().backward();
  for (std::size_t k = 0; k < reference->parameters().size(); ++k) {
    EXPECT_TRUE(close(pipe.parameters()[k].grad(), reference->parameters()[k].grad())) << k;
  }
}

}  // namespace
}  // namespace pipeprof
