// Tests for deferred batch norm: running statistics as one BatchNorm over the whole mini-batch.
#include <pipeprof/runtime/deferred_batch_norm.h>
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pipeprof {
namespace {

using test::pipeOptions;

/// fc0, bn1, relu2, (unflatten3, bn4, relu5 when twoDimensional: a cumulative-average BatchNorm2d).
/// Only the last BatchNorm sees the same input with and without deferral (earlier ones
/// normalise micro-batches with their own statistics), so each model has one BatchNorm.
torch::nn::Sequential bnModel(std::int64_t seed, bool twoDimensional = false) {
  torch::manual_seed(seed);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(4, 6));
  if (twoDimensional) {
    model->push_back("unflatten1", torch::nn::Unflatten(torch::nn::UnflattenOptions(1, {2, 3, 1})));
    model->push_back("bn2", torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(2).momentum(c10::nullopt)));
  } else {
    model->push_back("relu1", torch::nn::ReLU());
    model->push_back("bn2", torch::nn::BatchNorm1d(6));
  }
  model->push_back("relu3", torch::nn::ReLU());
  model->push_back("fc4", torch::nn::Flatten());
  return model;
}

void expectSameStatistics(const torch::nn::Sequential& a, const torch::nn::Sequential& b) {
  auto bufferA = a->named_buffers();
  auto bufferB = b->named_buffers();
  ASSERT_EQ(bufferA.size(), bufferB.size());
  for (const auto& item : bufferA) {
    SCOPED_TRACE(item.key());
    const torch::Tensor& other = bufferB[item.key()];
    if (item.value().is_floating_point()) {
      EXPECT_TRUE(torch::allclose(item.value(), other, 1e-4, 1e-4)) << item.value() << other;
    } else {
      EXPECT_TRUE(torch::equal(item.value(), other));
    }
  }
}

TEST(DeferredBatchNorm, RunningStatisticsMatchOneBatchNormOverTheWholeBatch) {
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    for (bool twoDimensional : {false, true}) {
      SCOPED_TRACE(std::string(checkpointName(mode)) + (twoDimensional ? " 2d" : " 1d"));
      torch::manual_seed(1);
      const torch::Tensor input = torch::randn({10, 4}) * 3 + 1;
      torch::nn::Sequential reference = bnModel(2, twoDimensional);
      for (int step = 0; step < 2; ++step) {
        reference->forward(input);
      }
      PipeOptions options;
      options.chunks = 4;  // 3, 3, 3, 1 rows
      options.checkpoint = mode;
      options.deferredBatchNorm = true;
      torch::nn::Sequential model = bnModel(2, twoDimensional);
      Pipe pipe(model, {2, 3}, options);
      for (int step = 0; step < 2; ++step) {
        pipe.forward(input).sum().backward();
      }
      expectSameStatistics(model, reference);  // the user's BatchNorms share the buffers
      EXPECT_EQ(model->named_buffers()["bn2.num_batches_tracked"].item<std::int64_t>(), 2);
    }
  }
}

TEST(DeferredBatchNorm, WithoutItStatisticsAreUpdatedPerMicroBatch) {
  torch::nn::Sequential model = bnModel(2);
  Pipe pipe(model, {2, 3}, pipeOptions({}, 4, Checkpoint::Never, false));
  pipe.forward(torch::randn({8, 4})).sum().backward();
  EXPECT_EQ(model->named_buffers()["bn2.num_batches_tracked"].item<std::int64_t>(), 4);
}

TEST(DeferredBatchNorm, EvalUsesRunningStatisticsAndDoesNotUpdateThem) {
  torch::nn::Sequential reference = bnModel(2);
  torch::nn::Sequential model = bnModel(2);
  const torch::Tensor input = torch::randn({6, 4});
  reference->forward(input);
  Pipe pipe(model, {1, 4}, pipeOptions({}, 2, Checkpoint::Always, true));
  pipe.forward(input);
  reference->eval();
  pipe.eval();
  torch::NoGradGuard noGrad;
  const torch::Tensor expected = reference->forward(input);
  EXPECT_TRUE(torch::allclose(pipe.forward(input), expected, 1e-4, 1e-5));
  expectSameStatistics(model, reference);
}

TEST(DeferredBatchNorm, NestedBatchNormIsRefused) {
  struct BlockImpl : torch::nn::Module {
    BlockImpl() : bn(register_module("bn", torch::nn::BatchNorm1d(4))) {}
    torch::Tensor forward(torch::Tensor x) { return bn(x); }
    torch::nn::BatchNorm1d bn;
  };
  torch::nn::Sequential model;
  model->push_back("block", std::make_shared<BlockImpl>());
  model->push_back("fc", torch::nn::Linear(4, 4));
  try {
    Pipe pipe(model, {1, 1}, pipeOptions({}, 2, Checkpoint::Never, true));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layer 0 ('block') contains a nested BatchNorm"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pipeprof
