// Tests for Pipe::step under every schedule: exact losses, gradients and statistics, errors, memory.
#include <pipeprof/core/custom_order.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/skip.h>

#include "pipe_test_util.h"
#include "skip_test_layers.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>

namespace pipeprof {
namespace {

using test::bnModel;
using test::close;
using test::meanSquaredError;
using test::skipModel;
using test::text;

constexpr std::int64_t kSkipLayers = 12;

/// A random composition of `layers` into `stages` positive parts.
std::vector<std::int64_t> randomBalance(std::mt19937& random, std::int64_t layers, std::int64_t stages) {
  std::vector<std::int64_t> cuts(static_cast<std::size_t>(layers - 1));
  for (std::size_t k = 0; k < cuts.size(); ++k) cuts[k] = static_cast<std::int64_t>(k) + 1;
  std::shuffle(cuts.begin(), cuts.end(), random);
  cuts.resize(static_cast<std::size_t>(stages - 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> balance;
  std::int64_t previous = 0;
  for (std::int64_t cut : cuts) {
    balance.push_back(cut - previous);
    previous = cut;
  }
  balance.push_back(layers - previous);
  return balance;
}

/// Every schedule family with its smallest v (2 for those with virtual stages).
std::vector<std::pair<ScheduleKind, std::int64_t>> everySchedule() {
  std::vector<std::pair<ScheduleKind, std::int64_t>> schedules;
  for (ScheduleKind kind : kScheduleKinds) schedules.emplace_back(kind, hasVirtualStages(kind) ? 2 : 1);
  return schedules;
}

PipeOptions scheduleOptions(ScheduleKind kind, std::int64_t v, std::int64_t chunks, Checkpoint mode) {
  PipeOptions options;
  options.chunks = chunks;
  options.checkpoint = mode;
  options.schedule = kind;
  options.stagesPerDevice = v;
  return options;
}

struct Reference {
  torch::Tensor loss;
  std::vector<torch::Tensor> grads;
};

/// lossFn applied to the whole batch of the unpartitioned model, then backward.
Reference reference(torch::nn::Sequential model, const torch::Tensor& input, const torch::Tensor& target) {
  torch::Tensor loss = meanSquaredError(model->forward(input), target);
  loss.backward();
  Reference result{loss.detach(), {}};
  for (const auto& parameter : model->parameters()) result.grads.push_back(parameter.grad());
  return result;
}

/// One step of `pipe`: a loss that needs no gradient, the reference's loss, and the
/// reference's gradient on every parameter.
::testing::AssertionResult stepsToReference(Pipe& pipe, const torch::Tensor& input, const torch::Tensor& target,
                                            const Reference& expected) {
  const torch::Tensor loss = pipe.step(input, target, meanSquaredError);
  if (loss.requires_grad()) return ::testing::AssertionFailure() << "the step's loss requires grad";
  if (!close(loss, expected.loss))
    return ::testing::AssertionFailure() << "loss " << loss << " against " << expected.loss;
  const auto parameters = pipe.parameters();
  if (parameters.size() != expected.grads.size()) {
    return ::testing::AssertionFailure() << parameters.size() << " parameters against " << expected.grads.size();
  }
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    if (!close(parameters[k].grad(), expected.grads[k])) return ::testing::AssertionFailure() << "parameter " << k;
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  ScheduleKind kind;
  std::int64_t v;
  std::vector<std::int64_t> balance;
  std::vector<std::int64_t> chunks;
};

TEST(PipeSchedules, StepEqualsTheUnpartitionedModelUnderEverySchedule) {
  torch::manual_seed(7);
  const torch::Tensor input = torch::randn({7, 8});
  const torch::Tensor target = torch::randn({7, 8});
  const Reference expected = reference(skipModel(), input, target);
  std::mt19937 random(42);
  const std::vector<Case> cases{
      {ScheduleKind::GPipe, 1, randomBalance(random, kSkipLayers, 3), {1, 3, 5}},
      {ScheduleKind::OneFOneB, 1, randomBalance(random, kSkipLayers, 3), {1, 2, 3, 5}},  // 7 rows: m = 1, 2, 3, 4
      {ScheduleKind::OneFOneB, 1, randomBalance(random, kSkipLayers, 4), {2, 3, 7}},
      {ScheduleKind::Interleaved, 2, {2, 2, 4, 4}, {2, 4, 6}},  // m = 2, 4, 4 (rows 4 3; 2 2 2 1)
      {ScheduleKind::Interleaved, 2, randomBalance(random, kSkipLayers, 4), {2, 4}},
      {ScheduleKind::Interleaved, 2, randomBalance(random, kSkipLayers, 6), {3}},     // p = 3, m = 3 (3 3 1)
      {ScheduleKind::Interleaved, 3, randomBalance(random, kSkipLayers, 6), {2, 4}},  // p = 2, v = 3
      {ScheduleKind::ZeroBubble, 1, randomBalance(random, kSkipLayers, 3), {1, 2, 5}},
      {ScheduleKind::ZeroBubble, 1, randomBalance(random, kSkipLayers, 4), {2, 7}},
      {ScheduleKind::InterleavedZeroBubble, 2, {2, 2, 4, 4}, {2, 4, 6}},
      {ScheduleKind::InterleavedZeroBubble, 2, randomBalance(random, kSkipLayers, 6), {3}},     // p = 3, m = 3
      {ScheduleKind::InterleavedZeroBubble, 3, randomBalance(random, kSkipLayers, 6), {2, 4}},  // p = 2, v = 3
      // V placement: skips from stage 0 (device 0) to stage 3 (device 0 again) and across.
      {ScheduleKind::ZeroBubbleV, 2, {2, 2, 4, 4}, {1, 2, 4, 7}},                     // m < 2p - 1 drops steps
      {ScheduleKind::ZeroBubbleV, 2, randomBalance(random, kSkipLayers, 6), {2, 5}},  // p = 3
  };
  for (const Case& c : cases) {
    for (std::int64_t chunks : c.chunks) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE(scheduleKindName(c.kind) + " v " + std::to_string(c.v) + " balance " + text(c.balance) +
                     " chunks " + std::to_string(chunks) + " mode " + std::string(checkpointName(mode)));
        Pipe pipe(skipModel(), c.balance, scheduleOptions(c.kind, c.v, chunks, mode));
        ASSERT_EQ(pipe.devices().size(), c.balance.size() / static_cast<std::size_t>(c.v));
        ASSERT_TRUE(stepsToReference(pipe, input, target, expected));
      }
    }
  }
}

// zb1p deferring fewer W's than torch's order (the search's choice where W keeps more than the
// forward) runs the same ops in another order: the same loss and gradients.
TEST(PipeSchedules, ZbOnePDeferringFewerWeightsComputesTheUnpartitionedGradients) {
  torch::manual_seed(7);
  const torch::Tensor input = torch::randn({7, 8});
  const torch::Tensor target = torch::randn({7, 8});
  const Reference expected = reference(skipModel(), input, target);
  std::mt19937 random(5);
  const std::vector<std::int64_t> balance = randomBalance(random, kSkipLayers, 4);
  for (const std::vector<std::int64_t>& deferred : {std::vector<std::int64_t>{0, 0, 0, 0}, {0, 1, 1, 1}}) {
    for (std::int64_t chunks : {2, 7}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE("deferred " + text(deferred) + " balance " + text(balance) + " chunks " + std::to_string(chunks) +
                     " mode " + std::string(checkpointName(mode)));
        PipeOptions options = scheduleOptions(ScheduleKind::ZeroBubble, 1, chunks, mode);
        options.deferredWeights = deferred;
        Pipe pipe(skipModel(), balance, options);
        ASSERT_TRUE(stepsToReference(pipe, input, target, expected));
      }
    }
  }
}

// Every order PyTorch 2.6 generates in tests/fixtures/pytorch-2.6-schedules (interleaved 1F1B,
// looped BFS, interleaved zero bubble, ZBV; p = 2 and 4, 4 to 16 micro-batches) runs as a
// custom order and computes the unpartitioned model's loss and gradients.
TEST(PipeSchedules, PytorchsOwnOrdersRunAsCustomOrders) {
  torch::manual_seed(9);
  const torch::Tensor input = torch::randn({16, 8});
  const torch::Tensor target = torch::randn({16, 8});
  const Reference expected = reference(skipModel(), input, target);
  const std::string dir = test::fixturePath("pytorch-2.6-schedules/");
  for (const char* family : {"interleaved_1f1b", "looped_bfs", "interleaved_zero_bubble", "zbv_zero_bubble"}) {
    for (const char* shape : {"_p2_m4_v2.csv", "_p2_m8_v2.csv", "_p4_m8_v2.csv", "_p4_m16_v2.csv"}) {
      const std::string name = std::string(family) + shape;
      SCOPED_TRACE(name);
      PipeOptions options;
      runCustomOrder(options, readCustomOrder(dir + name));
      options.checkpoint = Checkpoint::ExceptLast;
      const std::vector<std::int64_t> balance = options.order->stages() == 4
                                                    ? std::vector<std::int64_t>{2, 4, 3, 3}
                                                    : std::vector<std::int64_t>{1, 2, 1, 2, 2, 1, 2, 1};
      Pipe pipe(skipModel(), balance, options);
      ASSERT_TRUE(stepsToReference(pipe, input, target, expected));
    }
  }
}

// Each stage and micro-batch chooses its backward: B, or I then W, in one order (torch allows
// it). Four stages on two ranks, looped; checkpointed and kept micro-batches alike.
TEST(PipeSchedules, AnOrderMixingFullAndSplitBackwardsComputesTheUnpartitionedGradients) {
  torch::manual_seed(9);
  const torch::Tensor input = torch::randn({16, 8});
  const torch::Tensor target = torch::randn({16, 8});
  const Reference expected = reference(skipModel(), input, target);
  const std::string csv = "0F0,0F1,2F0,2F1,2I0,2W0,0B0,2B1,0I1,0W1\n"
                          "1F0,1F1,3F0,3B0,3F1,3I1,1I0,3W1,1W0,1B1\n";
  for (Checkpoint mode : {Checkpoint::Never, Checkpoint::ExceptLast, Checkpoint::Always}) {
    SCOPED_TRACE(checkpointName(mode));
    PipeOptions options;
    runCustomOrder(options, makeCustomOrder(readScheduleCsv(csv, "mixed.csv"), "mixed.csv"));
    options.checkpoint = mode;
    Pipe pipe(skipModel(), {2, 4, 3, 3}, options);
    ASSERT_TRUE(stepsToReference(pipe, input, target, expected));
  }
}

// Ranks holding different numbers of stages: three stages on two ranks, round robin with split
// backwards, and the last two stages on rank 1 with full ones (consecutive stages on one rank).
TEST(PipeSchedules, AnOrderWithUnequalStagesPerRankComputesTheUnpartitionedGradients) {
  torch::manual_seed(9);
  const torch::Tensor input = torch::randn({16, 8});
  const torch::Tensor target = torch::randn({16, 8});
  const Reference expected = reference(skipModel(), input, target);
  for (const std::string csv : {"0F0,0F1,2F0,2I0,2W0,2F1,2I1,2W1,0I0,0W0,0I1,0W1\n1F0,1F1,1I0,1W0,1I1,1W1\n",
                                "0F0,0F1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n"}) {
    for (Checkpoint mode : {Checkpoint::Never, Checkpoint::ExceptLast, Checkpoint::Always}) {
      SCOPED_TRACE(csv + std::string(checkpointName(mode)));
      PipeOptions options;
      runCustomOrder(options, makeCustomOrder(readScheduleCsv(csv, "unequal.csv"), "unequal.csv"));
      options.checkpoint = mode;
      Pipe pipe(skipModel(), {4, 5, 3}, options);
      ASSERT_EQ(pipe.devices().size(), 2u);
      ASSERT_TRUE(stepsToReference(pipe, input, target, expected));
    }
  }
}

TEST(PipeSchedules, StepOnGPipeEqualsForwardAndBackward) {
  torch::manual_seed(8);
  const torch::Tensor input = torch::randn({9, 8});
  const torch::Tensor target = torch::randn({9, 8});
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    SCOPED_TRACE(checkpointName(mode));
    Pipe stepped(skipModel(), {3, 4, 5}, scheduleOptions(ScheduleKind::GPipe, 1, 4, mode));
    Pipe classic(skipModel(), {3, 4, 5}, scheduleOptions(ScheduleKind::GPipe, 1, 4, mode));
    const torch::Tensor loss = stepped.step(input, target, meanSquaredError);
    const torch::Tensor classicLoss = meanSquaredError(classic.forward(input), target);
    classicLoss.backward();
    EXPECT_TRUE(close(loss, classicLoss.detach()));
    for (std::size_t k = 0; k < stepped.parameters().size(); ++k) {
      EXPECT_TRUE(close(stepped.parameters()[k].grad(), classic.parameters()[k].grad())) << k;
    }
  }
}

TEST(PipeSchedules, DropoutReplaysTheSameNumbersUnderEveryScheduleAndMode) {
  const auto build = [] {
    torch::manual_seed(11);
    torch::nn::Sequential model;
    for (int k = 0; k < 4; ++k) {
      model->push_back(torch::nn::Linear(8, 8));
      model->push_back(torch::nn::Dropout(0.4));
    }
    return model;
  };
  torch::manual_seed(12);
  const torch::Tensor input = torch::randn({8, 8});
  const torch::Tensor target = torch::randn({8, 8});
  const std::vector<std::int64_t> balance{2, 2, 2, 2};
  torch::Tensor expectedLoss;
  std::vector<torch::Tensor> expectedGrads;
  for (const auto& [kind, v] : everySchedule()) {
    for (Checkpoint mode : {Checkpoint::Never, Checkpoint::Always}) {
      SCOPED_TRACE(scheduleKindName(kind) + " " + std::string(checkpointName(mode)));
      Pipe pipe(build(), balance, scheduleOptions(kind, v, 4, mode));
      torch::manual_seed(13);  // the step's base seed: micro-batch i on stage j draws the same mask
      const torch::Tensor loss = pipe.step(input, target, meanSquaredError);
      if (!expectedLoss.defined()) {
        expectedLoss = loss;
        for (const auto& parameter : pipe.parameters()) expectedGrads.push_back(parameter.grad());
        continue;
      }
      EXPECT_TRUE(close(loss, expectedLoss));
      for (std::size_t k = 0; k < expectedGrads.size(); ++k) {
        EXPECT_TRUE(close(pipe.parameters()[k].grad(), expectedGrads[k])) << k;
      }
    }
  }
}

/// fc0, relu1, bn2 (BatchNorm1d), relu3, flatten4: only one BatchNorm, so its input is the
/// same with and without micro-batches.
TEST(PipeSchedules, DeferredBatchNormStatisticsEqualTheWholeBatchsUnderEverySchedule) {
  torch::manual_seed(1);
  const torch::Tensor input = torch::randn({10, 4}) * 3 + 1;
  const torch::Tensor target = torch::randn({10, 6});
  torch::nn::Sequential expected = bnModel();
  for (int step = 0; step < 2; ++step) expected->forward(input);
  // 10 rows: chunks 4 gives 3, 3, 3, 1 rows; chunks 2 gives 5, 5.
  const std::vector<Case> cases{{ScheduleKind::GPipe, 1, {2, 3}, {4}},
                                {ScheduleKind::OneFOneB, 1, {2, 2, 1}, {4, 2}},
                                {ScheduleKind::Interleaved, 2, {1, 1, 2, 1}, {4, 2}},
                                {ScheduleKind::Interleaved, 2, {2, 1, 1, 1}, {4}},
                                {ScheduleKind::ZeroBubble, 1, {2, 2, 1}, {4, 2}},
                                {ScheduleKind::InterleavedZeroBubble, 2, {1, 1, 2, 1}, {4, 2}},
                                {ScheduleKind::ZeroBubbleV, 2, {1, 2, 1, 1}, {4, 2}}};
  for (const Case& c : cases) {
    for (std::int64_t chunks : c.chunks) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE(scheduleKindName(c.kind) + " balance " + text(c.balance) + " chunks " + std::to_string(chunks) +
                     " mode " + std::string(checkpointName(mode)));
        PipeOptions options = scheduleOptions(c.kind, c.v, chunks, mode);
        options.deferredBatchNorm = true;
        torch::nn::Sequential model = bnModel();
        Pipe pipe(model, c.balance, options);
        for (int step = 0; step < 2; ++step) pipe.step(input, target, meanSquaredError);
        test::expectSameBuffers(expected, model);
      }
    }
  }
}

TEST(PipeSchedules, ForwardOnlyRunsAnyScheduleAndTrainingForwardAsksForStep) {
  torch::manual_seed(4);
  const torch::Tensor input = torch::randn({6, 8});
  torch::nn::Sequential model = skipModel();
  torch::Tensor expected;
  {
    torch::NoGradGuard noGrad;
    expected = model->forward(input);
  }
  Pipe oneFOneB(skipModel(), {3, 3, 3, 3}, scheduleOptions(ScheduleKind::OneFOneB, 1, 3, Checkpoint::ExceptLast));
  Pipe interleaved(skipModel(), {2, 2, 4, 4}, scheduleOptions(ScheduleKind::Interleaved, 2, 2, Checkpoint::Always));
  for (Pipe* pipe : {&oneFOneB, &interleaved}) {
    try {
      pipe->forward(input);
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("train with step(input, target, lossFn)"), std::string::npos) << e.what();
    }
    torch::NoGradGuard noGrad;
    EXPECT_TRUE(close(pipe->forward(input), expected));
  }
}

std::string pipeErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(PipeSchedules, ShapesAreCheckedNamingTheValues) {
  // 5 rows in 4 chunks: torch.chunk gives 3 micro-batches, not a multiple of the 2 devices.
  Pipe pipe(skipModel(), {2, 2, 4, 4}, scheduleOptions(ScheduleKind::Interleaved, 2, 4, Checkpoint::Never));
  const torch::Tensor input = torch::randn({5, 8});
  EXPECT_EQ(pipeErrorOf([&] {
              pipe.step(input, torch::randn({5, 8}), meanSquaredError);
            }),
            "a batch of 5 rows in 4 chunks splits into 3 micro-batches (as torch.chunk does), which the schedule "
            "cannot run: interleaved needs chunks a multiple of devices (chunks: 3, devices: 2, stages per device: 2)");
  EXPECT_NE(pipeErrorOf([&] {
              pipe.step(input, torch::randn({4, 8}), meanSquaredError);
            }).find("the target must have the input's rows along dim 0 (input: 5 rows, target: 4)"),
            std::string::npos);
  EXPECT_EQ(pipeErrorOf([] {
              Pipe(skipModel(), {3, 3, 3, 3}, scheduleOptions(ScheduleKind::Interleaved, 3, 1, Checkpoint::Never));
            }),
            "the stages must split evenly over the devices: 4 stages is not a multiple of 3 stages per device "
            "(balance: [3, 3, 3, 3])");
  EXPECT_NE(pipeErrorOf([] {
              Pipe(skipModel(), {6, 6}, scheduleOptions(ScheduleKind::OneFOneB, 2, 1, Checkpoint::Never));
            }).find("1f1b runs one stage per device (stages per device: 2)"),
            std::string::npos);
  PipeOptions tooFew = scheduleOptions(ScheduleKind::Interleaved, 2, 2, Checkpoint::Never);
  tooFew.devices = {torch::kCPU};
  EXPECT_EQ(pipeErrorOf([&] {
              Pipe(skipModel(), {2, 2, 4, 4}, tooFew);
            }),
            "too few devices to hold given stages (devices: 1, stages: 4, stages per device: 2, devices needed: 2)");
}

struct TrapSprung : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Passes x on; while armed, its second call (forward of micro-batch 1: one stage's worker
/// calls it in micro-batch order, and checkpoint never has no recompute) throws.
struct SecondCallTrapImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    if (armed && calls++ == 1) {
      throw TrapSprung("trap sprung");
    }
    return x;
  }
  bool armed = false;
  int calls = 0;
};
TORCH_MODULE(SecondCallTrap);

TEST(PipeSchedules, AnExceptionInStepIsAPipeErrorAndThePipeStaysUsable) {
  const auto build = [](SecondCallTrap trap) {
    torch::manual_seed(9);
    torch::nn::Sequential model;
    model->push_back("fc0", torch::nn::Linear(8, 8));
    model->push_back("tanh1", torch::nn::Tanh());
    model->push_back("fc2", torch::nn::Linear(8, 8));
    model->push_back("trap", trap);  // layer 3 of 6: stage 2 of [1, 1, 2, 2]
    model->push_back("fc4", torch::nn::Linear(8, 8));
    model->push_back("tanh5", torch::nn::Tanh());
    return model;
  };
  torch::manual_seed(5);
  const torch::Tensor input = torch::randn({4, 8});
  const torch::Tensor target = torch::randn({4, 8});
  const Reference expected = reference(build(SecondCallTrap()), input, target);
  for (const auto& [kind, v] : everySchedule()) {
    SCOPED_TRACE(scheduleKindName(kind));
    SecondCallTrap trap;
    Pipe pipe(build(trap), {1, 1, 2, 2}, scheduleOptions(kind, v, 4, Checkpoint::Never));
    trap->armed = true;
    try {
      pipe.step(input, target, meanSquaredError);
      FAIL() << "expected PipeError";
    } catch (const PipeError& e) {
      EXPECT_EQ(e.stage(), 2);
      EXPECT_EQ(e.microBatch(), 1);
      EXPECT_EQ(std::string(e.what()), "forward(1,2) on stage 2, micro-batch 1 failed: trap sprung");
      EXPECT_THROW(std::rethrow_if_nested(e), TrapSprung);
    }
    const torch::Tensor failingRow = target.slice(0, 2, 3);
    try {
      pipe.step(input, target, [&](const torch::Tensor& output, const torch::Tensor& rows) {
        if (torch::equal(rows, failingRow)) throw TrapSprung("loss failed");
        return meanSquaredError(output, rows);
      });
      FAIL() << "expected PipeError";
    } catch (const PipeError& e) {
      EXPECT_EQ(e.stage(), 3);
      EXPECT_EQ(e.microBatch(), 2);
      EXPECT_EQ(std::string(e.what()), "loss(2) on stage 3, micro-batch 2 failed: loss failed");
    }
    trap->armed = false;
    for (auto parameter : pipe.parameters()) parameter.mutable_grad() = torch::Tensor();
    EXPECT_TRUE(stepsToReference(pipe, input, target, expected));
  }
}

/// 4 stages of [Linear(128, 128), Tanh, Tanh, Tanh]: activations dwarf the parameters.
torch::nn::Sequential activationHeavyModel() {
  torch::manual_seed(6);
  torch::nn::Sequential model;
  for (int stage = 0; stage < 4; ++stage) {
    model->push_back(torch::nn::Linear(128, 128));
    for (int k = 0; k < 3; ++k) model->push_back(torch::nn::Tanh());
  }
  return model;
}

TEST(PipeSchedules, PeakBytesArePerDeviceAndOneFOneBHoldsFewerActivations) {
  const torch::Tensor input = torch::randn({256, 128});
  const torch::Tensor target = torch::randn({256, 128});
  const std::vector<std::int64_t> balance{4, 4, 4, 4};
  Pipe gpipe(activationHeavyModel(), balance, scheduleOptions(ScheduleKind::GPipe, 1, 8, Checkpoint::Never));
  Pipe oneFOneB(activationHeavyModel(), balance, scheduleOptions(ScheduleKind::OneFOneB, 1, 8, Checkpoint::Never));
  // The memory tracker's tags are per process: read each Pipe's figures right after its step.
  gpipe.step(input, target, meanSquaredError);
  const std::vector<Bytes> gpipePeaks = gpipe.peakBytes();
  oneFOneB.step(input, target, meanSquaredError);
  const std::vector<Bytes> oneFOneBPeaks = oneFOneB.peakBytes();
  ASSERT_EQ(gpipePeaks.size(), 4U);
  ASSERT_EQ(oneFOneBPeaks.size(), 4U);
  // Device 0 keeps 8 micro-batches' activations under GPipe, at most p = 4 under 1F1B.
  EXPECT_LT(oneFOneBPeaks[0], gpipePeaks[0])
      << "1f1b " << ::testing::PrintToString(oneFOneBPeaks) << " gpipe " << ::testing::PrintToString(gpipePeaks);

  // Interleaved: one figure per device, each at least its two stages' parameters.
  Pipe interleaved(activationHeavyModel(), {2, 2, 2, 2, 2, 2, 2, 2},
                   scheduleOptions(ScheduleKind::Interleaved, 2, 8, Checkpoint::Never));
  interleaved.step(input, target, meanSquaredError);
  const std::vector<Bytes> peaks = interleaved.peakBytes();
  ASSERT_EQ(peaks.size(), 4U);
  // Device d holds stages d and d + 4 (stage k: layers 2k, 2k + 1): devices 0 and 2 hold two
  // Linears each, devices 1 and 3 none.
  const Bytes linearBytes = (128 * 128 + 128) * 4;
  EXPECT_GT(peaks[0], 2 * linearBytes);
  EXPECT_GT(peaks[2], 2 * linearBytes);
  EXPECT_GT(peaks[1], 0);
  EXPECT_GT(peaks[3], 0);
  EXPECT_EQ(interleaved.devicePeakBytes().size(), 4U);
}

}  // namespace
}  // namespace pipeprof
