// The threaded Pipe and the stage runtime run one stage core: the same ops, seeds, messages and errors.
//
// Each test here once failed: the two executors were written twice and drifted apart (a nested
// dropout drew no seed on the ranks, eval mode recomputed on the ranks only, the ranks' loss
// and input errors said less, a malformed shape computed p two ways, a missing gradient was
// undefined between threads and zeros between ranks).
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
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using test::close;
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

/// Returns {main(x), aux(x)} and stashes side(x) as "aside": what follows uses neither aux nor aside.
struct BranchImpl : Skippable {
  BranchImpl()
      : Skippable({"aside"}, {}),
        main(register_module("main", torch::nn::Linear(8, 8))),
        aux(register_module("aux", torch::nn::Linear(8, 8))),
        side(register_module("side", torch::nn::Linear(8, 8))) {}
  std::vector<torch::Tensor> forward(const torch::Tensor& x) {
    stash("aside", side(x));
    return {main(x), aux(x)};
  }
  torch::nn::Linear main;
  torch::nn::Linear aux;
  torch::nn::Linear side;
};
TORCH_MODULE(Branch);

/// Pops "aside" and drops it; passes the first input on.
struct FirstOnlyImpl : Skippable {
  FirstOnlyImpl() : Skippable({}, {"aside"}) {}
  torch::Tensor forward(const std::vector<torch::Tensor>& xs) {
    pop("aside");
    return xs[0].tanh();
  }
};
TORCH_MODULE(FirstOnly);

/// branch0 (main, aux, side), first1, fc2, fc3: aux's output and the skip from side get no gradient.
torch::nn::Sequential unusedOutputsModel() {
  torch::manual_seed(11);
  torch::nn::Sequential model;
  model->push_back("branch0", Branch());
  model->push_back("first1", FirstOnly());
  model->push_back("fc2", torch::nn::Linear(8, 8));
  model->push_back("fc3", torch::nn::Linear(8, 8));
  return model;
}

/// Every parameter by name after one step and one AdamW step (weight decay: it moves a
/// parameter with a zero gradient, not one with none), with its gradient before the update.
struct TrainedParameters {
  std::map<std::string, torch::Tensor> values;
  std::map<std::string, torch::Tensor> grads;
  double loss = 0;
};

void stepWithAdamW(const std::vector<std::string>& names, const std::vector<torch::Tensor>& parameters,
                   TrainedParameters& into) {
  torch::optim::AdamW optimizer(parameters, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  for (std::size_t k = 0; k < names.size(); ++k) into.grads[names[k]] = parameters[k].grad();
  optimizer.step();
  for (std::size_t k = 0; k < names.size(); ++k) into.values[names[k]] = parameters[k].detach().clone();
}

TEST(ExecutorsAgree, AnOutputOrSkipThatGetsNoGradientSendsNoneAndItsWeightsStayPut) {
  const torch::Tensor input = torch::randn({4, 8});
  const torch::Tensor target = torch::randn({4, 8});
  std::vector<std::string> names;
  for (const auto& named : unusedOutputsModel()->named_parameters()) names.push_back(named.key());
  const torch::Tensor auxBefore = unusedOutputsModel()->named_parameters()["branch0.aux.weight"].clone();
  for (const StageOptions& options : {stageOptions(ScheduleKind::GPipe, 1, {1, 3}, 2, Checkpoint::Always),
                                      stageOptions(ScheduleKind::ZeroBubble, 1, {1, 3}, 2, Checkpoint::Never),
                                      stageOptions(ScheduleKind::Interleaved, 2, {1, 1, 1, 1}, 2, Checkpoint::Never)}) {
    SCOPED_TRACE(scheduleLabel(options.schedule, options.stagesPerDevice));
    TrainedParameters threaded;
    Pipe pipe(unusedOutputsModel(), options.balance, pipeOptions(options));
    threaded.loss = pipe.step(input, target, meanSquaredError).item<double>();
    stepWithAdamW(names, pipe.parameters(), threaded);

    TrainedParameters ranks;
    std::mutex mutex;
    std::vector<torch::nn::Sequential> models{unusedOutputsModel(), unusedOutputsModel()};
    const auto errors = runRanks(2, [&](int r, Transport& transport) {
      StageRuntime runtime(models[static_cast<std::size_t>(r)], options, transport);
      const torch::Tensor loss = runtime.step(input, target, meanSquaredError, 0);
      TrainedParameters own;
      stepWithAdamW(runtime.parameterNames(), runtime.parameters(), own);
      std::lock_guard<std::mutex> lock(mutex);
      if (loss.defined()) ranks.loss = loss.item<double>();
      ranks.values.insert(own.values.begin(), own.values.end());
      ranks.grads.insert(own.grads.begin(), own.grads.end());
    });
    ASSERT_EQ(errors[0] + errors[1], "");
    EXPECT_DOUBLE_EQ(ranks.loss, threaded.loss);
    EXPECT_FALSE(threaded.grads.at("branch0.aux.weight").defined());
    EXPECT_FALSE(threaded.grads.at("branch0.side.weight").defined());
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      ASSERT_EQ(ranks.grads.at(name).defined(), threaded.grads.at(name).defined());
      if (threaded.grads.at(name).defined()) {
        EXPECT_TRUE(close(ranks.grads.at(name), threaded.grads.at(name)));
      }
      EXPECT_TRUE(close(ranks.values.at(name), threaded.values.at(name)));
    }
    EXPECT_TRUE(torch::equal(ranks.values.at("branch0.aux.weight"), auxBefore));
  }
}

/// {a(x), b(x)}.
struct TwoHeadsImpl : torch::nn::Module {
  TwoHeadsImpl() : a(register_module("a", torch::nn::Linear(8, 8))), b(register_module("b", torch::nn::Linear(8, 8))) {}
  std::vector<torch::Tensor> forward(const torch::Tensor& x) { return {a(x), b(x)}; }
  torch::nn::Linear a;
  torch::nn::Linear b;
};
TORCH_MODULE(TwoHeads);

/// Uses its second input in training mode only: the set-up pass (eval mode) finds it no gradient.
struct SecondInTrainingImpl : torch::nn::Module {
  torch::Tensor forward(const std::vector<torch::Tensor>& xs) { return is_training() ? xs[0] + xs[1] : xs[0]; }
};
TORCH_MODULE(SecondInTraining);

TEST(ExecutorsAgree, AGradientTheSetUpDidNotFindFailsOnTheRanksNamingTheTensor) {
  torch::manual_seed(12);
  std::vector<torch::nn::Sequential> models;
  for (int r = 0; r < 2; ++r) {
    torch::nn::Sequential model;
    model->push_back("heads0", TwoHeads());
    model->push_back("sum1", SecondInTraining());
    models.push_back(model);
  }
  const StageOptions options = stageOptions(ScheduleKind::GPipe, 1, {1, 1}, 2, Checkpoint::Never);
  const auto errors = runRanks(2, [&](int r, Transport& transport) {
    StageRuntime runtime(models[static_cast<std::size_t>(r)], options, transport);
    runtime.step(torch::randn({4, 8}), torch::randn({4, 8}), meanSquaredError, 0);
  });
  EXPECT_NE(errors[1].find("a gradient reached tensor 1 of stage 1's inputs, which the set-up pass"), std::string::npos)
      << errors[1];
}

}  // namespace
}  // namespace pipeprof
