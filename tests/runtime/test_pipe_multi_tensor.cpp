// Tests for boundaries and inputs of several tensors: layers taking or returning std::vector<Tensor>.
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

using test::allBalances;
using test::close;
using test::pipeOptions;
using test::text;

struct SplitImpl : torch::nn::Module {
  std::vector<torch::Tensor> forward(const torch::Tensor& x) { return {x * 2, x + 1}; }
};
TORCH_MODULE(Split);

struct PairLinearImpl : torch::nn::Module {
  PairLinearImpl() : linear(register_module("linear", torch::nn::Linear(8, 8))) {}
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& xs) { return {linear(xs[0]), xs[1].tanh()}; }
  torch::nn::Linear linear;
};
TORCH_MODULE(PairLinear);

struct MergeImpl : torch::nn::Module {
  torch::Tensor forward(const std::vector<torch::Tensor>& xs) { return xs[0] * xs[1]; }
};
TORCH_MODULE(Merge);

torch::nn::Sequential pairModel(bool twoInputs) {
  torch::manual_seed(4);
  torch::nn::Sequential model;
  if (twoInputs) {
    model->push_back("pair0", PairLinear());
  } else {
    model->push_back("fc0", torch::nn::Linear(8, 8));
    model->push_back("split1", Split());
  }
  model->push_back("pair2", PairLinear());
  model->push_back("merge3", Merge());
  model->push_back("fc4", torch::nn::Linear(8, 8));
  return model;
}

void expectEquivalentOutputs(bool twoInputs) {
  torch::manual_seed(8);
  const torch::Tensor a = torch::randn({5, 8});
  const torch::Tensor b = torch::randn({5, 8});
  torch::nn::Sequential reference = pairModel(twoInputs);
  torch::Tensor ra = a.clone().requires_grad_(true);
  torch::Tensor rb = b.clone().requires_grad_(true);
  torch::Tensor expected = twoInputs ? reference->forward(std::vector<torch::Tensor>{ra, rb}) : reference->forward(ra);
  expected.pow(2).sum().backward();
  const auto layers = static_cast<std::int64_t>(reference->size());
  for (const auto& balance : allBalances(layers)) {
    for (std::int64_t chunks : {1, 2, 6}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::Never}) {
        SCOPED_TRACE("balance " + text(balance) + " chunks " + std::to_string(chunks) + " " +
                     std::string(checkpointName(mode)));
        Pipe pipe(pairModel(twoInputs), balance, pipeOptions({}, chunks, mode, false));
        torch::Tensor pa = a.clone().requires_grad_(true);
        torch::Tensor pb = b.clone().requires_grad_(true);
        torch::Tensor output = twoInputs ? pipe.forward(std::vector<torch::Tensor>{pa, pb}).at(0) : pipe.forward(pa);
        ASSERT_TRUE(close(output, expected));
        output.pow(2).sum().backward();
        ASSERT_TRUE(close(pa.grad(), ra.grad()));
        if (twoInputs) {
          ASSERT_TRUE(close(pb.grad(), rb.grad()));
        }
        auto expectedParameters = reference->parameters();
        auto actual = pipe.parameters();
        for (std::size_t k = 0; k < actual.size(); ++k) {
          ASSERT_TRUE(close(actual[k].grad(), expectedParameters[k].grad())) << k;
        }
      }
    }
  }
}

TEST(PipeMultiTensor, BoundariesOfSeveralTensorsEqualTheSequential) { expectEquivalentOutputs(false); }

TEST(PipeMultiTensor, SeveralInputsEqualTheSequential) { expectEquivalentOutputs(true); }

TEST(PipeMultiTensor, InputsMustShareTheirBatchSize) {
  Pipe pipe(pairModel(true), {2, 2});
  EXPECT_THROW(pipe.forward(std::vector<torch::Tensor>{torch::ones({4, 8}), torch::ones({3, 8})}),
               std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
