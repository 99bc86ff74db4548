// Tests for the stage runtime over the in-process transport: exact losses and gradients, messages, failures.
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/in_process_transport.h>
#include <pipeprof/runtime/stage_runtime.h>

#include "pipe_test_util.h"
#include "rank_world.h"
#include "skip_test_layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <set>
#include <thread>

namespace pipeprof {
namespace {

using test::close;
using test::meanSquaredError;
using test::skipModel;
using test::stageOptions;
using test::text;

struct RankResult {
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> grads;  ///< by parameter name in the whole model
  std::string error;
  std::exception_ptr exception;
};

/// One step on every rank of a world of p ranks, each a thread with its own copy of the model.
std::vector<RankResult> runWorld(InProcessWorld& world, const std::function<torch::nn::Sequential()>& build,
                                 const StageOptions& options, const torch::Tensor& input, const torch::Tensor& target,
                                 int skipRank = -1) {
  const auto p = static_cast<int>(options.balance.size() / static_cast<std::size_t>(options.stagesPerDevice));
  std::vector<torch::nn::Sequential> models;
  for (int r = 0; r < p; ++r) models.push_back(build());  // same seed: the same parameters on every rank
  std::vector<RankResult> results(static_cast<std::size_t>(p));
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r) {
    if (r == skipRank) continue;
    ranks.emplace_back([&, r] {
      RankResult& result = results[static_cast<std::size_t>(r)];
      try {
        auto transport = world.transport(r);
        StageRuntime runtime(models[static_cast<std::size_t>(r)], options, *transport);
        models[static_cast<std::size_t>(r)] = nullptr;
        result.loss = runtime.step(input, target, meanSquaredError, 0);
        const auto names = runtime.parameterNames();
        const auto parameters = runtime.parameters();
        for (std::size_t k = 0; k < names.size(); ++k) result.grads[names[k]] = parameters[k].grad();
      } catch (const std::exception& error) {
        result.error = error.what();
        result.exception = std::current_exception();
        world.kill(r);
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  return results;
}

struct StageCase {
  ScheduleKind kind;
  std::int64_t v;
  std::vector<std::int64_t> balance;
  std::int64_t chunks;
};

TEST(StageRuntime, EveryScheduleComputesTheUnpartitionedModelsLossAndGradients) {
  torch::manual_seed(7);
  const torch::Tensor input = torch::randn({7, 8});
  const torch::Tensor target = torch::randn({7, 8});
  torch::nn::Sequential whole = skipModel();
  torch::Tensor expectedLoss = meanSquaredError(whole->forward(input), target);
  expectedLoss.backward();
  const std::vector<StageCase> cases{
      {ScheduleKind::GPipe, 1, {3, 9}, 3},        // skips a and b cross ranks 0 -> 1
      {ScheduleKind::GPipe, 1, {2, 5, 5}, 4},     // three ranks, rows 2 2 2 1
      {ScheduleKind::OneFOneB, 1, {2, 4, 6}, 5},  // m = 4 (rows 2 2 2 1)
      {ScheduleKind::OneFOneB, 1, {6, 6}, 7},
      {ScheduleKind::Interleaved, 2, {2, 2, 4, 4}, 4},        // skip a stays on rank 0 (stage 0 -> 2)
      {ScheduleKind::Interleaved, 2, {1, 3, 3, 2, 2, 1}, 3},  // three ranks, v = 2
      {ScheduleKind::ZeroBubble, 1, {3, 9}, 3},
      {ScheduleKind::ZeroBubble, 1, {2, 4, 6}, 5},
      {ScheduleKind::InterleavedZeroBubble, 2, {2, 2, 4, 4}, 4},
      {ScheduleKind::InterleavedZeroBubble, 2, {1, 3, 3, 2, 2, 1}, 3},
      {ScheduleKind::ZeroBubbleV, 2, {2, 2, 4, 4}, 4},        // stages 0, 3 on rank 0 (its loss); 1, 2 on rank 1
      {ScheduleKind::ZeroBubbleV, 2, {1, 3, 3, 2, 2, 1}, 2},  // three ranks, m < 2p - 1
  };
  for (const StageCase& c : cases) {
    for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
      SCOPED_TRACE(scheduleKindName(c.kind) + " balance " + text(c.balance) + " chunks " + std::to_string(c.chunks) +
                   " mode " + std::string(checkpointName(mode)));
      InProcessWorld world(static_cast<int>(c.balance.size() / static_cast<std::size_t>(c.v)),
                           std::chrono::seconds(30));
      const auto results =
          runWorld(world, skipModel, stageOptions(c.kind, c.v, c.balance, c.chunks, mode), input, target);
      std::map<std::string, torch::Tensor> grads;
      std::string errors;
      for (const RankResult& result : results) errors += result.error;
      ASSERT_EQ(errors, "");
      const auto lossRank =
          static_cast<std::size_t>(stageOptions(c.kind, c.v, c.balance, c.chunks, mode)
                                       .deviceOfStage(static_cast<std::int64_t>(c.balance.size()) - 1));
      for (std::size_t r = 0; r < results.size(); ++r) {
        EXPECT_EQ(results[r].loss.defined(), r == lossRank) << "only the last stage's rank has the loss";
        grads.insert(results[r].grads.begin(), results[r].grads.end());
      }
      const torch::Tensor& loss = results[lossRank].loss;
      ASSERT_TRUE(close(loss, expectedLoss.detach())) << loss << expectedLoss;
      ASSERT_EQ(grads.size(), whole->named_parameters().size());
      for (const auto& named : whole->named_parameters()) {
        ASSERT_TRUE(close(grads.at(named.key()), named.value().grad())) << named.key();
      }
    }
  }
}

TEST(StageRuntime, DeferredBatchNormStatisticsEqualTheWholeBatchs) {
  torch::manual_seed(1);
  const torch::Tensor input = torch::randn({10, 4}) * 3 + 1;
  const torch::Tensor target = torch::randn({10, 6});
  torch::nn::Sequential expected = test::bnModel();
  for (int step = 0; step < 2; ++step) expected->forward(input);
  // bn2 is in stage 1 (rank 1) under both; 10 rows in 4 chunks are 3, 3, 3, 1.
  for (const StageCase& c :
       {StageCase{ScheduleKind::GPipe, 1, {2, 3}, 4}, StageCase{ScheduleKind::OneFOneB, 1, {2, 2, 1}, 4},
        StageCase{ScheduleKind::ZeroBubble, 1, {2, 2, 1}, 4},
        StageCase{ScheduleKind::ZeroBubbleV, 2, {1, 2, 1, 1}, 4}}) {
    SCOPED_TRACE(scheduleKindName(c.kind) + " balance " + text(c.balance));
    StageOptions options = stageOptions(c.kind, c.v, c.balance, c.chunks, Checkpoint::ExceptLast);
    options.deferredBatchNorm = true;
    const auto p = static_cast<int>(c.balance.size() / static_cast<std::size_t>(c.v));
    std::vector<torch::nn::Sequential> models;
    for (int r = 0; r < p; ++r) models.push_back(test::bnModel());
    const std::string failures = test::joined(test::runRanks(p, [&](int r, Transport& transport) {
      StageRuntime runtime(models[static_cast<std::size_t>(r)], options, transport);
      for (int step = 0; step < 2; ++step) runtime.step(input, target, meanSquaredError, 0);
    }));
    ASSERT_EQ(failures, "");
    // The rank holding bn2 shares its buffers with the Sequential it was given.
    test::expectSameBuffers(expected, models[1]);
  }
}

TEST(StageRuntime, EachRankHoldsOnlyItsOwnStagesParameters) {
  InProcessWorld world(2, std::chrono::seconds(30));
  const auto results =
      runWorld(world, skipModel, stageOptions(ScheduleKind::Interleaved, 2, {2, 2, 4, 4}, 2, Checkpoint::Never),
               torch::randn({4, 8}), torch::randn({4, 8}));
  std::vector<std::string> rank0;
  for (const auto& [name, grad] : results[0].grads) rank0.push_back(name);
  std::vector<std::string> rank1;
  for (const auto& [name, grad] : results[1].grads) rank1.push_back(name);
  // Stages 0 (fc0, stash_a) and 2 (fc4, pop_a, stash_b, fc7) on rank 0; 1 (fc2, tanh3) and 3
  // (tanh8, pop_b, fc10, tanh11) on rank 1.
  EXPECT_EQ(rank0,
            (std::vector<std::string>{"fc0.bias", "fc0.weight", "fc4.bias", "fc4.weight", "fc7.bias", "fc7.weight"}));
  EXPECT_EQ(rank1, (std::vector<std::string>{"fc10.bias", "fc10.weight", "fc2.bias", "fc2.weight"}));
}

/// Every message one rank sent, in order: (to, tag, shape).
std::vector<std::tuple<int, std::uint32_t, std::vector<std::int64_t>>> sentBy(const InProcessWorld& world, int rank) {
  std::vector<std::tuple<int, std::uint32_t, std::vector<std::int64_t>>> sent;
  for (const SentMessage& message : world.messages()) {
    if (message.fromRank == rank) sent.emplace_back(message.toRank, message.tag, message.shape);
  }
  return sent;
}

TEST(StageRuntime, OneFOneBSendsTheseMessagesInThisOrder) {
  // linear-tanh x 4 on 2 ranks, 4 rows in 2 micro-batches. Tags: (((kind * (skips + 1) + skip + 1)
  // * n + edge) * m + i) * 8 + tensor, kinds shapes 0 (tensor 0: specs, 1: gradient mask),
  // activation 1, gradient 2.
  InProcessWorld world(2, std::chrono::seconds(30));
  const auto results = runWorld(
      world, [] { return test::linearTanh(4); }, stageOptions(ScheduleKind::OneFOneB, 1, {2, 2}, 2, Checkpoint::Never),
      torch::randn({4, 8}), torch::randn({4, 8}));
  ASSERT_EQ(results[0].error + results[1].error, "");
  using Sent = std::vector<std::tuple<int, std::uint32_t, std::vector<std::int64_t>>>;
  // Rank 0: the shape header of edge 0 -> 1 (81 int64), then F0 and F1's activations (warm-up 1).
  EXPECT_EQ(sentBy(world, 0), (Sent{{1, 0, {81}}, {1, 32, {2, 8}}, {1, 40, {2, 8}}}));
  // Rank 1: which of edge 0's tensors get a gradient (1 int64), then B0's and B1's input gradients.
  EXPECT_EQ(sentBy(world, 1), (Sent{{0, 1, {1}}, {0, 64, {2, 8}}, {0, 72, {2, 8}}}));
}

/// Every op-hook call of one rank, with the tracer's clock at the time.
class TimedHooks final : public OpHooks {
 public:
  explicit TimedHooks(const HostTracer& tracer) : tracer_(tracer) {}
  void onOpBegin(std::int64_t id) override { begins.emplace(id, tracer_.nowNs()); }
  void onOpEnd(std::int64_t id) override { ++ends[id]; }
  std::multimap<std::int64_t, TimeNs> begins;
  std::map<std::int64_t, int> ends;

 private:
  const HostTracer& tracer_;
};

TEST(StageRuntime, EachTracedMessageHandsTheWorkItLaunchesToItsSpan) {
  // Where NCCL carries the messages, a send and a receive's post launch kernels; the CUPTI
  // collector, as the tracer's op hooks, attributes them to the span whose id is pushed then.
  const StageOptions options = stageOptions(ScheduleKind::OneFOneB, 1, {2, 2}, 4, Checkpoint::Never);
  std::vector<torch::nn::Sequential> models{test::linearTanh(4), test::linearTanh(4)};
  std::vector<HostTracer> tracers(2);
  std::vector<TimedHooks> hooks{TimedHooks(tracers[0]), TimedHooks(tracers[1])};
  const auto errors = test::runRanks(2, [&](int r, Transport& transport) {
    const auto rank = static_cast<std::size_t>(r);
    StageRuntime runtime(models[rank], options, transport);
    runtime.step(torch::randn({8, 8}), torch::randn({8, 8}), meanSquaredError, 0);  // agrees the shapes
    tracers[rank].setOpHooks(&hooks[rank]);
    tracers[rank].enable();
    runtime.setTracer(&tracers[rank]);
    runtime.step(torch::randn({8, 8}), torch::randn({8, 8}), meanSquaredError, 0);
    runtime.setTracer(nullptr);
  });
  ASSERT_EQ(test::joined(errors), "");
  int postedAhead = 0;
  for (std::size_t r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    std::set<std::int64_t> ids;
    for (const TraceEvent& span : tracers[r].drain().events) {
      if (span.kind != EventKind::Span || (span.lane != "send" && span.lane != "receive")) continue;
      SCOPED_TRACE(span.name);
      EXPECT_TRUE(ids.insert(span.correlationId).second);  // an id of its own
      // Pushed around its send, or its post and then its receive: the same id each time.
      const auto pushes = static_cast<int>(hooks[r].begins.count(span.correlationId));
      ASSERT_GE(pushes, 1);
      EXPECT_EQ(hooks[r].ends[span.correlationId], pushes);
      if (hooks[r].begins.lower_bound(span.correlationId)->second < span.startNs) ++postedAhead;
    }
    EXPECT_EQ(ids.size(), 8u);  // rank 0 sends 4 activations and receives 4 gradients; rank 1 the other way
  }
  EXPECT_GT(postedAhead, 0);  // receives posted while earlier ops ran carry the id of their post
}

TEST(StageRuntime, AWorldOfTheWrongSizeIsRefusedNamingBoth) {
  InProcessWorld world(3, std::chrono::seconds(5));
  auto transport = world.transport(0);
  try {
    StageRuntime runtime(skipModel(), stageOptions(ScheduleKind::OneFOneB, 1, {6, 6}, 2, Checkpoint::Never),
                         *transport);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("2 pipeline devices"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("world has 3 ranks"), std::string::npos) << error.what();
  }
}

TEST(StageRuntime, ALostPeerIsAPipeErrorNamingTheOpAndThePeer) {
  InProcessWorld world(2, std::chrono::seconds(30));
  world.kill(0);
  const auto results = runWorld(world, skipModel, stageOptions(ScheduleKind::OneFOneB, 1, {6, 6}, 2, Checkpoint::Never),
                                torch::randn({4, 8}), torch::randn({4, 8}), /*skipRank=*/0);
  ASSERT_NE(results[1].error, "");
  try {
    std::rethrow_exception(results[1].exception);
  } catch (const PipeError& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0 is gone"), std::string::npos) << error.what();
    try {
      std::rethrow_if_nested(error);
      FAIL() << "the transport's error should be nested";
    } catch (const PipeError& nested) {
      try {
        std::rethrow_if_nested(nested);
      } catch (const TransportError& transport) {
        EXPECT_EQ(transport.peer(), 0);
        EXPECT_FALSE(transport.timedOut());
      }
    } catch (const TransportError& transport) {
      EXPECT_EQ(transport.peer(), 0);
      EXPECT_FALSE(transport.timedOut());
    }
  }
}

TEST(StageRuntime, ASilentPeerTimesOut) {
  InProcessWorld world(2, std::chrono::milliseconds(200));
  const auto results = runWorld(world, skipModel, stageOptions(ScheduleKind::GPipe, 1, {6, 6}, 2, Checkpoint::Never),
                                torch::randn({4, 8}), torch::randn({4, 8}), /*skipRank=*/0);
  EXPECT_NE(results[1].error.find("sent nothing"), std::string::npos) << results[1].error;
}

}  // namespace
}  // namespace pipeprof
