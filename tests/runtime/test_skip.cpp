// Tests for skip connections: plain Sequential, every balance and mode in a Pipe, namespaces, checks.
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/skip.h>

#include "pipe_test_util.h"
#include "skip_test_layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

using test::allBalances;
using test::close;
using test::makeSkip;
using test::NamedSkip;
using test::pipeOptions;
using test::text;

/// fc0, stash a, fc2, tanh, pop a, fc5 — the skip crosses partitions in most balances.
torch::nn::Sequential skipModel(bool namespaced) {
  torch::manual_seed(3);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(8, 8));
  NamedSkip outer = makeSkip({"a"}, {});
  NamedSkip inner = makeSkip({"a"}, {});
  NamedSkip innerPop = makeSkip({}, {"a"});
  NamedSkip outerPop = makeSkip({}, {"a"});
  if (namespaced) {
    Namespace first;
    Namespace second;
    outer->isolate(first);
    outerPop->isolate(first);
    inner->isolate(second, {"a"});
    innerPop->isolate(second);
    model->push_back("stash_outer", outer);
    model->push_back("stash_inner", inner);
    model->push_back("fc3", torch::nn::Linear(8, 8));
    model->push_back("pop_inner", innerPop);
    model->push_back("pop_outer", outerPop);
  } else {
    model->push_back("stash", outer);
    model->push_back("fc2", torch::nn::Linear(8, 8));
    model->push_back("tanh", torch::nn::Tanh());
    model->push_back("pop", outerPop);
    model->push_back("fc5", torch::nn::Linear(8, 8));
  }
  return model;
}

void expectEquivalentWithSkips(bool namespaced) {
  torch::manual_seed(5);
  const torch::Tensor input = torch::randn({4, 8});
  torch::nn::Sequential reference = skipModel(namespaced);
  torch::Tensor referenceInput = input.clone().requires_grad_(true);
  torch::Tensor referenceOutput = reference->forward(referenceInput);  // the default tracker
  referenceOutput.pow(2).sum().backward();
  for (const auto& balance : allBalances(6)) {
    for (std::int64_t chunks : {1, 3, 5}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE("balance " + text(balance) + " chunks " + std::to_string(chunks) + " mode " +
                     std::string(checkpointName(mode)));
        PipeOptions options;
        options.chunks = chunks;
        options.checkpoint = mode;
        Pipe pipe(skipModel(namespaced), balance, options);
        torch::Tensor pipeInput = input.clone().requires_grad_(true);
        torch::Tensor output = pipe.forward(pipeInput);
        ASSERT_TRUE(close(output, referenceOutput));
        output.pow(2).sum().backward();
        ASSERT_TRUE(close(pipeInput.grad(), referenceInput.grad()));
        auto expected = reference->parameters();
        auto actual = pipe.parameters();
        for (std::size_t k = 0; k < actual.size(); ++k) {
          ASSERT_TRUE(close(actual[k].grad(), expected[k].grad())) << "parameter " << k;
        }
      }
    }
  }
}

TEST(Skip, PipeEqualsThePlainSequentialInEveryBalanceAndMode) { expectEquivalentWithSkips(false); }

TEST(Skip, NamespacesIsolateTheSameName) { expectEquivalentWithSkips(true); }

TEST(Skip, EvalAndNoGradWork) {
  torch::nn::Sequential reference = skipModel(false);
  const torch::Tensor input = torch::randn({6, 8});
  torch::NoGradGuard noGrad;
  const torch::Tensor expected = reference->forward(input);
  Pipe pipe(skipModel(false), {1, 2, 2, 1}, pipeOptions({}, 3, Checkpoint::Always, false));
  EXPECT_TRUE(close(pipe.forward(input), expected));
}

TEST(Skip, RoutesListLayerIndices) {
  auto routes = skipRoutes(skipModel(false));
  ASSERT_EQ(routes.size(), 1U);
  EXPECT_EQ(routes[0].name, "a");
  EXPECT_EQ(routes[0].stashLayer, 1);
  EXPECT_EQ(routes[0].popLayer, 4);
  auto namespaced = skipRoutes(skipModel(true));
  ASSERT_EQ(namespaced.size(), 2U);
  EXPECT_EQ(namespaced[0].name, "a");
  EXPECT_EQ(namespaced[1].name, "a#2");
}

std::string verifyMessage(const torch::nn::Sequential& model) {
  try {
    verifySkips(model);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

torch::nn::Sequential sequentialOf(std::vector<NamedSkip> layers) {
  torch::nn::Sequential model;
  for (auto& layer : layers) {
    model->push_back(layer);
  }
  return model;
}

const std::string kHeader = "one or more pairs of stash and pop do not match:\n\n";

TEST(Skip, VerificationListsEveryProblemInTorchgpipesWords) {
  EXPECT_EQ(verifyMessage(sequentialOf({makeSkip({"foo"}, {})})),
            kHeader + "* no module declared 'foo' as poppable but stashed");
  EXPECT_EQ(verifyMessage(sequentialOf({makeSkip({}, {"foo"})})),
            kHeader + "* '0' declared 'foo' as poppable but it was not stashed");
  EXPECT_EQ(verifyMessage(sequentialOf({makeSkip({"foo"}, {}), makeSkip({"foo"}, {}), makeSkip({}, {"foo"})})),
            kHeader + "* '1' redeclared 'foo' as stashable but not isolated by namespace");
  EXPECT_EQ(verifyMessage(sequentialOf({makeSkip({"foo"}, {}), makeSkip({}, {"foo"}), makeSkip({}, {"foo"})})),
            kHeader + "* '2' redeclared 'foo' as poppable but not isolated by namespace");
  EXPECT_EQ(verifyMessage(sequentialOf({makeSkip({"foo"}, {"foo"})})),
            kHeader + "* '0' declared 'foo' both as stashable and as poppable");
  EXPECT_EQ(verifyMessage(sequentialOf({makeSkip({}, {"bar"}), makeSkip({"foo"}, {})})),
            kHeader + "* '0' declared 'bar' as poppable but it was not stashed\n"
                      "* no module declared 'foo' as poppable but stashed");
  EXPECT_EQ(verifyMessage(skipModel(true)), "");
}

TEST(Skip, PipeRefusesUnmatchedPairs) {
  try {
    Pipe pipe(sequentialOf({makeSkip({"foo"}, {}), makeSkip({}, {})}), {1, 1});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), kHeader + "* no module declared 'foo' as poppable but stashed");
  }
}

TEST(Skip, UndeclaredNamesAreRefused) {
  struct BadImpl : Skippable {
    BadImpl() : Skippable({}, {}) {}
    torch::Tensor forward(torch::Tensor x) {
      stash("nope", x);
      return x;
    }
  };
  auto bad = std::make_shared<BadImpl>();
  EXPECT_THROW(bad->forward(torch::ones({1})), std::invalid_argument);
  NamedSkip layer = makeSkip({"a"}, {});
  EXPECT_THROW(layer->isolate(Namespace(), {"b"}), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
