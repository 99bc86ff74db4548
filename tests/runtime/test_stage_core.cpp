// The stage core alone, over a fake channel: one thread runs a step's compute ops in the
// schedule's topological order, and the channel keeps what each op sends until the op that
// receives it asks. A receive of something never sent throws, and every op's receives are
// compared with receivesOf(op) (what a rank posts ahead), so every test also proves that the
// core receives exactly what its own routing sent, in an order the schedule allows.
#include "stage/op_receives.h"
#include "stage/stage_core.h"
#include "stage/step_setup.h"

#include <pipeprof/runtime/skip.h>

#include "pipe_test_util.h"
#include "skip_test_layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace pipeprof::test {
namespace {

/// Both halves of a channel on one thread: a message waits in a map under (what, i, to) until
/// it is received; every send is logged as "what(i,from->to)".
class FakeChannel : public ForwardChannel, public BackwardChannel {
 public:
  Tensors receiveActivations(std::int64_t i, std::int64_t j) override { return take(tensors_, {"act", i, j}, j - 1); }
  void sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) override {
    put(tensors_, {"act", i, j + 1}, outputs, j);
  }
  void sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) override {
    put(skips_, {"skip", i, route.scheduleIndex}, tensor, route.stashJ, route.popJ);
  }
  torch::Tensor receiveSkip(const StageSkipRoute& route, std::int64_t i) override {
    return take(skips_, {"skip", i, route.scheduleIndex}, route.stashJ, route.popJ);
  }
  Tensors receiveOutputGrads(std::int64_t i, std::int64_t j) override { return take(tensors_, {"grad", i, j}, j + 1); }
  void sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) override {
    if (j == 0) {
      inputGrads[i] = std::move(grads);
      return;
    }
    put(tensors_, {"grad", i, j - 1}, grads, j);
  }
  void sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) override {
    put(skips_, {"skip-grad", i, route.scheduleIndex}, std::move(grad), route.popJ, route.stashJ);
  }
  torch::Tensor receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) override {
    return take(skips_, {"skip-grad", i, route.scheduleIndex}, route.popJ, route.stashJ);
  }

  /// Messages sent and not received: none once a step is done.
  std::size_t pending() const { return tensors_.size() + skips_.size(); }

  std::vector<std::string> sent;               ///< every send, in order
  std::vector<std::string> received;           ///< every receive, in order
  std::map<std::int64_t, Tensors> inputGrads;  ///< stage 0's input gradients, by micro-batch

 private:
  using Key = std::tuple<std::string, std::int64_t, std::int64_t>;

  /// "what(i,from->to)"; `to` defaults to the key's stage.
  static std::string message(const Key& key, std::int64_t from, std::int64_t to = -1) {
    const auto& [what, i, where] = key;
    return what + "(" + std::to_string(i) + "," + std::to_string(from) + "->" + std::to_string(to < 0 ? where : to) +
           ")";
  }
  template <typename Value>
  void put(std::map<Key, Value>& box, const Key& key, Value value, std::int64_t from, std::int64_t to = -1) {
    sent.push_back(message(key, from, to));
    if (!box.emplace(key, std::move(value)).second) throw std::logic_error("sent twice: " + sent.back());
  }
  template <typename Value>
  Value take(std::map<Key, Value>& box, const Key& key, std::int64_t from, std::int64_t to = -1) {
    received.push_back(message(key, from, to));
    auto found = box.find(key);
    if (found == box.end()) throw std::logic_error("received before it was sent: " + received.back());
    Value value = std::move(found->second);
    box.erase(found);
    return value;
  }

  std::map<Key, Tensors> tensors_;
  std::map<Key, torch::Tensor> skips_;
};

/// One training step of `module` split as `shape` runs through the core alone.
struct CoreStep {
  CoreStep(const torch::nn::Sequential& module, const PipelineShape& shape) : pipelineShape(shape) {
    const std::vector<torch::Device> devices(static_cast<std::size_t>(shape.pipelineDevices()), torch::kCPU);
    stages = splitModule(module, shape, devices);
    routes = stageSkipRoutes(module, shape.balance);
    schedules = std::make_unique<ScheduleCache>(shape, skipRoutes(module));
  }

  /// Runs every compute op of the step on input/target; returns the summed weighted losses.
  torch::Tensor run(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn) {
    SplitBatch batch = splitStepBatch(pipelineShape, input, target);
    const Schedule& schedule = schedules->get(static_cast<std::int64_t>(batch.inputs.size()), true, true);
    StageCoreConfig config;
    config.schedule = &schedule;
    for (const Stage& stage : stages) config.stages.push_back(&stage);
    config.routes = &routes;
    config.lossFn = &lossFn;
    config.batchRows = batch.rows;
    StageCore core(config, channel, &channel, std::move(batch.inputs), std::move(batch.targets));
    for (const Op& op : schedule.ops()) {
      if (!op.isCompute()) continue;
      channel.received.clear();
      core.run(op);
      std::vector<std::string> received = channel.received;
      std::sort(received.begin(), received.end());
      EXPECT_EQ(received, expectedReceives(op, schedule.stages())) << schedule.label(op);
    }
    core.sumSharedGradients();
    torch::Tensor loss = torch::zeros({});
    for (const torch::Tensor& value : core.lossValues()) loss = loss + value;
    return loss;
  }

  /// What receivesOf(op) says the op receives, as the fake channel writes it, sorted.
  std::vector<std::string> expectedReceives(const Op& op, std::int64_t n) const {
    std::vector<std::string> expected;
    const std::string at = "(" + std::to_string(op.i) + ",";
    for (const OpReceive& receive : receivesOf(op, n, routes)) {
      switch (receive.what) {
        case OpReceive::What::Activations:
          expected.push_back("act" + at + std::to_string(receive.fromJ) + "->" + std::to_string(op.j) + ")");
          break;
        case OpReceive::What::OutputGradients:
          expected.push_back("grad" + at + std::to_string(receive.fromJ) + "->" + std::to_string(op.j) + ")");
          break;
        case OpReceive::What::Skip:
          expected.push_back("skip" + at + std::to_string(receive.route->stashJ) + "->" +
                             std::to_string(receive.route->popJ) + ")");
          break;
        case OpReceive::What::SkipGradient:
          expected.push_back("skip-grad" + at + std::to_string(receive.route->popJ) + "->" +
                             std::to_string(receive.route->stashJ) + ")");
          break;
      }
    }
    std::sort(expected.begin(), expected.end());
    return expected;
  }

  PipelineShape pipelineShape;
  FakeChannel channel;
  std::vector<Stage> stages;
  std::vector<StageSkipRoute> routes;
  std::unique_ptr<ScheduleCache> schedules;
};

PipelineShape shapeOf(ScheduleKind schedule, std::vector<std::int64_t> balance, std::int64_t v, std::int64_t chunks,
                      Checkpoint checkpoint) {
  PipelineShape shape;
  shape.schedule = schedule;
  shape.balance = std::move(balance);
  shape.stagesPerDevice = v;
  shape.chunks = chunks;
  shape.checkpoint = checkpoint;
  return shape;
}

/// The unpartitioned model's loss and gradients, against which a step is compared.
void expectSameAsUnpartitioned(const torch::nn::Sequential& reference, const torch::nn::Sequential& split,
                               const torch::Tensor& expectedLoss, const torch::Tensor& loss) {
  EXPECT_TRUE(torch::allclose(loss, expectedLoss, 1e-5, 1e-6)) << loss << " vs " << expectedLoss;
  const auto expected = reference->named_parameters();
  for (const auto& parameter : split->named_parameters()) {
    ASSERT_TRUE(parameter.value().grad().defined()) << parameter.key();
    EXPECT_TRUE(torch::allclose(parameter.value().grad(), expected[parameter.key()].grad(), 1e-5, 1e-6))
        << parameter.key();
  }
}

TEST(StageCore, EveryScheduleOverAFakeChannelTrainsAsTheUnpartitionedModel) {
  struct Case {
    ScheduleKind schedule;
    std::vector<std::int64_t> balance;
    std::int64_t v;
  };
  const std::vector<Case> cases = {{ScheduleKind::GPipe, {3, 3}, 1},
                                   {ScheduleKind::OneFOneB, {2, 4}, 1},
                                   {ScheduleKind::ZeroBubble, {3, 3}, 1},
                                   {ScheduleKind::Interleaved, {1, 2, 2, 1}, 2},
                                   {ScheduleKind::InterleavedZeroBubble, {2, 1, 1, 2}, 2},
                                   {ScheduleKind::ZeroBubbleV, {1, 1, 2, 2}, 2}};
  const torch::Tensor input = torch::randn({8, 8});
  const torch::Tensor target = torch::randn({8, 8});
  torch::nn::Sequential reference = linearTanh(6, /*seed=*/5);
  const torch::Tensor expectedLoss = meanSquaredError(reference->forward(input), target);
  expectedLoss.backward();
  for (const Case& c : cases) {
    for (const Checkpoint mode : {Checkpoint::Never, Checkpoint::Always}) {
      SCOPED_TRACE(scheduleKindName(c.schedule) + " " + std::string(checkpointName(mode)));
      const torch::nn::Sequential model = linearTanh(6, /*seed=*/5);
      CoreStep step(model, shapeOf(c.schedule, c.balance, c.v, 4, mode));
      const torch::Tensor loss = step.run(input, target, meanSquaredError);
      expectSameAsUnpartitioned(reference, model, expectedLoss, loss);
      EXPECT_EQ(step.channel.pending(), 0u) << "every message sent was received";
    }
  }
}

TEST(StageCore, SendsEachActivationAndGradientOnceBetweenNeighbours) {
  const torch::nn::Sequential model = linearTanh(4, /*seed=*/1);
  CoreStep step(model, shapeOf(ScheduleKind::GPipe, {2, 2}, 1, 2, Checkpoint::Never));
  step.run(torch::randn({4, 8}), torch::randn({4, 8}), meanSquaredError);
  std::vector<std::string> sent = step.channel.sent;
  std::sort(sent.begin(), sent.end());
  EXPECT_EQ(sent, (std::vector<std::string>{"act(0,0->1)", "act(1,0->1)", "grad(0,1->0)", "grad(1,1->0)"}));
  // Stage 0's input needs no gradient: what it hands the caller is "no gradient".
  ASSERT_EQ(step.channel.inputGrads.size(), 2u);
  for (const auto& [i, grads] : step.channel.inputGrads) {
    for (const torch::Tensor& grad : grads) EXPECT_FALSE(grad.defined()) << "micro-batch " << i;
  }
}

TEST(StageCore, ASkipCrossingStagesTravelsOnceEachWayAndTrainsAsTheUnpartitionedModel) {
  const torch::Tensor input = torch::randn({4, 8});
  const torch::Tensor target = torch::randn({4, 8});
  torch::nn::Sequential reference = skipModel();
  const torch::Tensor expectedLoss = meanSquaredError(reference->forward(input), target);
  expectedLoss.backward();
  const torch::nn::Sequential model = skipModel();
  // Skip a from stage 0 to stage 2, skip b from stage 2 to stage 3.
  CoreStep step(model, shapeOf(ScheduleKind::Interleaved, {2, 2, 4, 4}, 2, 2, Checkpoint::ExceptLast));
  const torch::Tensor loss = step.run(input, target, meanSquaredError);
  expectSameAsUnpartitioned(reference, model, expectedLoss, loss);
  std::map<std::string, int> skipMessages;
  for (const std::string& message : step.channel.sent) {
    if (message.rfind("skip", 0) == 0) ++skipMessages[message];
  }
  EXPECT_EQ(skipMessages, (std::map<std::string, int>{{"skip(0,0->2)", 1},
                                                      {"skip(1,0->2)", 1},
                                                      {"skip(0,2->3)", 1},
                                                      {"skip(1,2->3)", 1},
                                                      {"skip-grad(0,2->0)", 1},
                                                      {"skip-grad(1,2->0)", 1},
                                                      {"skip-grad(0,3->2)", 1},
                                                      {"skip-grad(1,3->2)", 1}}));
  EXPECT_EQ(step.channel.pending(), 0u);
}

TEST(StageCore, ALayersErrorReachesTheCallerAsTheLayerThrewIt) {
  const torch::nn::Sequential model = linearTanh(4, /*seed=*/1);
  CoreStep step(model, shapeOf(ScheduleKind::GPipe, {2, 2}, 1, 2, Checkpoint::Never));
  // Width 8 layers given width 5 rows: the first forward fails inside LibTorch.
  EXPECT_THROW(step.run(torch::randn({4, 5}), torch::randn({4, 8}), meanSquaredError), c10::Error);
}

}  // namespace
}  // namespace pipeprof::test
