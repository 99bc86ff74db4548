// Tests for the Pipe: equivalence with the unpartitioned Sequential, modes, recompute counts.
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

using test::allBalances;
using test::close;
using test::linearTanh;
using test::pipeOptions;
using test::text;

constexpr std::int64_t kPipeBatch = 5;

void expectEquivalent(std::int64_t layers) {
  torch::manual_seed(123);
  const torch::Tensor input = torch::randn({kPipeBatch, 8});
  const torch::Tensor target = torch::randn({kPipeBatch, 8});

  torch::nn::Sequential reference = linearTanh(layers, 7);
  torch::Tensor referenceInput = input.clone().requires_grad_(true);
  torch::Tensor referenceOutput = reference->forward(referenceInput);
  torch::mse_loss(referenceOutput, target).backward();

  for (const auto& balance : allBalances(layers)) {
    for (std::int64_t chunks : {1, 2, 3, 4, static_cast<int>(kPipeBatch + 1)}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE("balance " + text(balance) + " chunks " + std::to_string(chunks) + " mode " +
                     std::string(checkpointName(mode)));
        torch::nn::Sequential model = linearTanh(layers, 7);
        PipeOptions options;
        options.chunks = chunks;
        options.checkpoint = mode;
        Pipe pipe(model, balance, options);
        torch::Tensor pipeInput = input.clone().requires_grad_(true);
        torch::Tensor output = pipe.forward(pipeInput);
        ASSERT_TRUE(close(output, referenceOutput));
        torch::mse_loss(output, target).backward();
        ASSERT_TRUE(close(pipeInput.grad(), referenceInput.grad()));
        auto expected = reference->parameters();
        auto actual = pipe.parameters();
        ASSERT_EQ(actual.size(), expected.size());
        for (std::size_t k = 0; k < actual.size(); ++k) {
          ASSERT_TRUE(close(actual[k].grad(), expected[k].grad())) << "parameter " << k;
        }
      }
    }
  }
}

TEST(Pipe, EqualsTheSequentialForEveryBalanceChunksAndModeOf4Layers) { expectEquivalent(4); }

TEST(Pipe, EqualsTheSequentialForEveryBalanceChunksAndModeOf6Layers) { expectEquivalent(6); }

std::int64_t countSpans(const Trace& trace, Phase phase, std::int64_t partition) {
  std::int64_t count = 0;
  for (const auto& event : trace.events) {
    if (event.kind == EventKind::Span && event.phase == phase && event.partition == partition) {
      ++count;
    }
  }
  return count;
}

TEST(Pipe, RecomputesMicroBatchesAsTheModeSays) {
  struct Case {
    Checkpoint mode;
    bool training;
    std::int64_t expected;
  };
  for (const Case& c : {Case{Checkpoint::Always, true, 4}, Case{Checkpoint::ExceptLast, true, 3},
                        Case{Checkpoint::Never, true, 0}, Case{Checkpoint::Always, false, 0}}) {
    SCOPED_TRACE(std::string(checkpointName(c.mode)) + (c.training ? " train" : " eval"));
    HostTracer tracer;
    tracer.enable();
    PipeOptions options;
    options.chunks = 4;
    options.checkpoint = c.mode;
    Pipe pipe(linearTanh(4), {2, 2}, options);
    pipe.setTracer(&tracer);
    pipe.train(c.training);
    pipe.forward(torch::randn({8, 8})).sum().backward();
    Trace trace = tracer.drain();
    EXPECT_EQ(countSpans(trace, Phase::Recompute, 0), c.expected);
    EXPECT_EQ(countSpans(trace, Phase::Recompute, 1), c.expected);
    EXPECT_EQ(countSpans(trace, Phase::Forward, 0), 4);
    EXPECT_EQ(countSpans(trace, Phase::Backward, 1), 4);
  }
}

TEST(Pipe, TakesItsShapeFromTheOptionsOrTheBalanceGiven) {
  PipeOptions options = pipeOptions({}, 2, Checkpoint::Never, false);
  options.balance = {1, 3};
  options.schedule = ScheduleKind::OneFOneB;
  const Pipe fromOptions(linearTanh(4), options);
  EXPECT_EQ(fromOptions.balance(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(static_cast<const PipelineShape&>(fromOptions.options()), static_cast<const PipelineShape&>(options));
  EXPECT_EQ(fromOptions.devices().size(), 2u);
  // The balance given replaces the options' one.
  const Pipe fromBalance(linearTanh(4), {2, 1, 1}, options);
  EXPECT_EQ(fromBalance.balance(), (std::vector<std::int64_t>{2, 1, 1}));
  EXPECT_EQ(fromBalance.options().balance, (std::vector<std::int64_t>{2, 1, 1}));
  EXPECT_EQ(fromBalance.options().schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(fromBalance.devices().size(), 3u);
}

TEST(Pipe, NoGradRunsForwardOnlyAndKeepsNothing) {
  Pipe pipe(linearTanh(4), {1, 3}, pipeOptions({}, 3, Checkpoint::Always, false));
  torch::NoGradGuard noGrad;
  torch::Tensor output = pipe.forward(torch::randn({6, 8}));
  EXPECT_FALSE(output.requires_grad());
  EXPECT_EQ(output.sizes(), (std::vector<std::int64_t>{6, 8}));
}

TEST(Pipe, OutputRequiresGradThroughParametersAlone) {
  Pipe pipe(linearTanh(2), {1, 1}, pipeOptions({}, 2, Checkpoint::ExceptLast, false));
  torch::Tensor output = pipe.forward(torch::randn({4, 8}));
  EXPECT_TRUE(output.requires_grad());
  output.sum().backward();
  EXPECT_TRUE(pipe.parameters().front().grad().defined());
}

TEST(Pipe, ReportsItsConfiguration) {
  Pipe pipe(linearTanh(4), {3, 1});
  EXPECT_EQ(pipe.balance(), (std::vector<std::int64_t>{3, 1}));
  ASSERT_EQ(pipe.devices().size(), 2U);
  EXPECT_TRUE(pipe.devices()[1].is_cpu());
  EXPECT_EQ(pipe.module()->size(), 4U);
  EXPECT_EQ(pipe.parameters().size(), 4U);
  EXPECT_TRUE(pipe.isTraining());
  pipe.eval();
  EXPECT_FALSE(pipe.isTraining());
}

TEST(Pipe, TracesEveryOpWithScheduleLabels) {
  HostTracer tracer;
  tracer.enable();
  Pipe pipe(linearTanh(4), {2, 2}, pipeOptions({}, 2, Checkpoint::ExceptLast, false));
  pipe.setTracer(&tracer);
  pipe.forward(torch::randn({4, 8})).sum().backward();
  Trace trace = tracer.drain();
  std::vector<std::string> names;
  for (const auto& event : trace.events) {
    if (event.kind == EventKind::Span) {
      names.push_back(event.name);
    }
  }
  for (const char* expected :
       {"forward(0,0)", "forward(1,1)", "copy(0,0->1)", "recompute(0,1)", "backward(0,0)", "grad-copy(1,1->0)"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), std::string("recompute(1,0)")), 0);
}

}  // namespace
}  // namespace pipeprof
