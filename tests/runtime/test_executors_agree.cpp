// The threaded Pipe and the stage runtime run one stage core: the same ops, seeds, messages and errors.
//
// Each test here once failed: the two executors were written twice and drifted apart (a nested
// dropout drew no seed on the ranks, eval mode recomputed on the ranks only, the ranks' loss
// and input errors said less, a malformed shape computed p two ways).
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/in_process_transport.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/stage_runtime.h>

#include "pipe_test_util.h"
#include "rank_world.h"
#include "skip_test_layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using test::meanSquaredError;
using test::runRanks;
using test::stageOptions;

/// A layer with a dropout inside it (a child of the Sequential that is not itself a dropout).
struct DropoutBlockImpl : torch::nn::Module {
  DropoutBlockImpl()
      : drop(register_module("drop", torch::nn::Dropout(0.5))), fc(register_module("fc", torch::nn::Linear(16, 16))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc(drop(x)); }
  torch::nn::Dropout drop;
  torch::nn::Linear fc;
};
TORCH_MODULE(DropoutBlock);

/// fc0, block1 (dropout, fc), fc2.
torch::nn::Sequential nestedDropoutModel() {
  torch::manual_seed(3);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(16, 16));
  model->push_back("block1", DropoutBlock());
  model->push_back("fc2", torch::nn::Linear(16, 16));
  return model;
}

PipeOptions pipeOptions(const StageOptions& stage) {
  PipeOptions options;
  static_cast<PipelineShape&>(options) = stage;
  options.devices = {torch::kCPU, torch::kCPU};
  return options;
}

TEST(ExecutorsAgree, ANestedDropoutDrawsTheSameSeedAndMasksOnTheRanks) {
  const StageOptions options = stageOptions(ScheduleKind::GPipe, 1, {2, 1}, 4, Checkpoint::Always);
  const torch::Tensor input = torch::randn({8, 16});
  const torch::Tensor target = torch::randn({8, 16});
  torch::manual_seed(5);
  Pipe pipe(nestedDropoutModel(), options.balance, pipeOptions(options));
  torch::manual_seed(5);  // the generator state every rank process starts the step with
  const double threaded = pipe.step(input, target, meanSquaredError).item<double>();

  std::vector<torch::nn::Sequential> models{nestedDropoutModel(), nestedDropoutModel()};
  std::vector<std::unique_ptr<StageRuntime>> runtimes(2);
  double ranks = 0;
  torch::manual_seed(5);
  std::uint64_t seed = 0;
  const auto errors = runRanks(2, [&](int r, Transport& transport) {
    runtimes[static_cast<std::size_t>(r)] =
        std::make_unique<StageRuntime>(models[static_cast<std::size_t>(r)], options, transport);
    if (r == 0) seed = runtimes[0]->stepSeed();  // the ranks share this process's generator
    transport.barrier();
    const torch::Tensor loss = runtimes[static_cast<std::size_t>(r)]->step(input, target, meanSquaredError, seed);
    if (loss.defined()) ranks = loss.item<double>();
  });
  ASSERT_EQ(errors[0] + errors[1], "");
  EXPECT_NE(seed, 0u) << "the nested dropout makes the model stochastic";
  EXPECT_DOUBLE_EQ(ranks, threaded);
}

/// The compute-op span names of a trace, sorted (forward(i,j), recompute(i,j), loss(i), ...).
std::vector<std::string> computeOps(const Trace& trace) {
  std::vector<std::string> names;
  for (const TraceEvent& event : trace.events) {
    if (event.kind != EventKind::Span || event.lane.rfind("partition ", 0) != 0) continue;
    names.push_back(event.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ExecutorsAgree, BothRunTheSameOpsInTrainingAndInEvalMode) {
  const torch::Tensor input = torch::randn({6, 8});
  const torch::Tensor target = torch::randn({6, 8});
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    const StageOptions options = stageOptions(ScheduleKind::OneFOneB, 1, {2, 2}, 3, Checkpoint::Always);
    HostTracer threadedTracer;
    threadedTracer.enable();
    Pipe pipe(test::linearTanh(4), options.balance, pipeOptions(options));
    pipe.train(training);
    pipe.setTracer(&threadedTracer);
    pipe.step(input, target, meanSquaredError);
    pipe.setTracer(nullptr);

    std::vector<torch::nn::Sequential> models{test::linearTanh(4), test::linearTanh(4)};
    std::vector<HostTracer> tracers(2);
    const auto errors = runRanks(2, [&](int r, Transport& transport) {
      StageRuntime runtime(models[static_cast<std::size_t>(r)], options, transport);
      runtime.train(training);
      tracers[static_cast<std::size_t>(r)].enable();
      runtime.setTracer(&tracers[static_cast<std::size_t>(r)]);
      runtime.step(input, target, meanSquaredError, 0);
      runtime.setTracer(nullptr);
    });
    ASSERT_EQ(errors[0] + errors[1], "");
    std::vector<std::string> rankOps = computeOps(tracers[0].drain());
    const std::vector<std::string> rank1 = computeOps(tracers[1].drain());
    rankOps.insert(rankOps.end(), rank1.begin(), rank1.end());
    std::sort(rankOps.begin(), rankOps.end());
    const std::vector<std::string> threadedOps = computeOps(threadedTracer.drain());
    EXPECT_EQ(rankOps, threadedOps);
    const bool recomputes = std::any_of(threadedOps.begin(), threadedOps.end(),
                                        [](const std::string& name) { return name.rfind("recompute", 0) == 0; });
    EXPECT_EQ(recomputes, training) << "eval mode checkpoints nothing";
  }
}

/// The message of the PipeError the threaded Pipe and rank 1 (the last stage's) throw for one step.
std::pair<std::string, std::string> stepErrors(const StageOptions& options, const torch::Tensor& input,
                                               const torch::Tensor& target, const LossFn& loss) {
  std::string threaded;
  try {
    Pipe pipe(test::linearTanh(4), options.balance, pipeOptions(options));
    pipe.step(input, target, loss);
  } catch (const std::exception& error) {
    threaded = error.what();
  }
  std::vector<torch::nn::Sequential> models{test::linearTanh(4), test::linearTanh(4)};
  const auto errors = runRanks(2, [&](int r, Transport& transport) {
    StageRuntime runtime(models[static_cast<std::size_t>(r)], options, transport);
    runtime.step(input, target, loss, 0);
  });
  return {threaded, errors[1]};
}

TEST(ExecutorsAgree, ALossThatIsNotAScalarFailsAlikeNamingItsSize) {
  const auto [threaded, rank] = stepErrors(
      stageOptions(ScheduleKind::GPipe, 1, {2, 2}, 2, Checkpoint::Never), torch::randn({4, 8}), torch::randn({4, 8}),
      [](const torch::Tensor& output, const torch::Tensor& target) { return (output - target).pow(2); });
  EXPECT_NE(threaded.find("the loss function must return a scalar (it returned 16 elements)"), std::string::npos)
      << threaded;
  EXPECT_EQ(rank, threaded);
}

TEST(ExecutorsAgree, ATargetWithoutRowsIsRefusedAlike) {
  const auto [threaded, rank] = stepErrors(stageOptions(ScheduleKind::GPipe, 1, {2, 2}, 2, Checkpoint::Never),
                                           torch::randn({4, 8}), torch::tensor(1.0), meanSquaredError);
  EXPECT_NE(threaded.find("step() needs a target with a batch dimension"), std::string::npos) << threaded;
  EXPECT_EQ(rank, threaded);
}

TEST(ExecutorsAgree, AMalformedShapeIsRefusedAlike) {
  // Three stages cannot be two per device: both executors say so, with one definition of p.
  const StageOptions options = stageOptions(ScheduleKind::Interleaved, 2, {1, 1, 2}, 2, Checkpoint::Never);
  std::string threaded;
  try {
    Pipe pipe(test::linearTanh(4), options.balance, pipeOptions(options));
  } catch (const std::invalid_argument& error) {
    threaded = error.what();
  }
  std::string rank;
  InProcessWorld world(1, std::chrono::seconds(5));
  try {
    auto transport = world.transport(0);
    StageRuntime runtime(test::linearTanh(4), options, *transport);
  } catch (const std::invalid_argument& error) {
    rank = error.what();
  }
  EXPECT_NE(threaded, "");
  EXPECT_EQ(rank, threaded);
}

}  // namespace
}  // namespace pipeprof
