// Layers that write their input in place (ReLU(inplace=True)) at a stage's start, in both executors.
//
// A stage's input used to be a leaf that requires grad, which every in-place op refuses; and a
// checkpointed forward that writes its input would hand the recompute changed values.
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/stage_runtime.h>

#include "pipe_test_util.h"
#include "rank_world.h"
#include "skip_test_layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using test::close;
using test::meanSquaredError;
using test::stageOptions;
using test::text;

/// Doubles the first half of its input's columns in place, through a view, and returns it.
struct DoubleHalfInPlaceImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    x.narrow(1, 0, x.size(1) / 2).mul_(2);
    return x;
  }
};
TORCH_MODULE(DoubleHalfInPlace);

torch::nn::ReLU reluInPlace() { return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)); }

/// fc0 | relu1 (in place) fc2 fc3 | relu4 (in place) fc5 | double6 (in place, a view) fc7 with
/// kBalance: every stage after the first starts by writing its input.
torch::nn::Sequential inPlaceModel() {
  torch::manual_seed(11);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(8, 8));
  model->push_back("relu1", reluInPlace());
  model->push_back("fc2", torch::nn::Linear(8, 8));
  model->push_back("fc3", torch::nn::Linear(8, 8));
  model->push_back("relu4", reluInPlace());
  model->push_back("fc5", torch::nn::Linear(8, 8));
  model->push_back("double6", DoubleHalfInPlace());
  model->push_back("fc7", torch::nn::Linear(8, 8));
  return model;
}
const std::vector<std::int64_t> kBalance{1, 3, 2, 2};

struct InPlaceExpected {
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> grads;
};

InPlaceExpected unpartitioned(const torch::Tensor& input, const torch::Tensor& target) {
  torch::nn::Sequential whole = inPlaceModel();
  torch::Tensor loss = meanSquaredError(whole->forward(input.clone()), target);
  loss.backward();
  InPlaceExpected expected{loss.detach(), {}};
  for (const auto& named : whole->named_parameters()) expected.grads[named.key()] = named.value().grad();
  return expected;
}

struct InPlaceCase {
  ScheduleKind kind;
  std::int64_t v;
};
const std::vector<InPlaceCase> kInPlaceCases{
    {ScheduleKind::GPipe, 1}, {ScheduleKind::OneFOneB, 1}, {ScheduleKind::Interleaved, 2}};

TEST(InPlaceLayers, ThreadedPipeComputesTheUnpartitionedModelUnderEveryScheduleAndMode) {
  torch::manual_seed(3);
  const torch::Tensor input = torch::randn({6, 8});
  const torch::Tensor target = torch::randn({6, 8});
  const InPlaceExpected expected = unpartitioned(input, target);
  for (const InPlaceCase& c : kInPlaceCases) {
    for (std::int64_t chunks : {2, 6}) {
      for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
        SCOPED_TRACE(scheduleKindName(c.kind) + " chunks " + std::to_string(chunks) + " " +
                     std::string(checkpointName(mode)));
        PipeOptions options;
        static_cast<PipelineShape&>(options) = stageOptions(c.kind, c.v, kBalance, chunks, mode);
        Pipe pipe(inPlaceModel(), kBalance, options);
        for (int step = 0; step < 2; ++step) {  // the second step knows which stages write their input
          for (const auto& parameter : pipe.parameters()) parameter.mutable_grad() = torch::Tensor();
          const torch::Tensor loss = pipe.step(input, target, meanSquaredError);
          ASSERT_TRUE(close(loss, expected.loss)) << loss << expected.loss;
          for (const auto& named : pipe.module()->named_parameters()) {
            ASSERT_TRUE(close(named.value().grad(), expected.grads.at(named.key()))) << named.key();
          }
        }
      }
    }
  }
}

TEST(InPlaceLayers, RanksComputeTheUnpartitionedModelUnderEveryScheduleAndMode) {
  torch::manual_seed(4);
  const torch::Tensor input = torch::randn({6, 8});
  const torch::Tensor target = torch::randn({6, 8});
  const InPlaceExpected expected = unpartitioned(input, target);
  for (const InPlaceCase& c : kInPlaceCases) {
    for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
      SCOPED_TRACE(scheduleKindName(c.kind) + " " + std::string(checkpointName(mode)));
      const StageOptions options = stageOptions(c.kind, c.v, kBalance, 6, mode);
      const int p = static_cast<int>(kBalance.size() / static_cast<std::size_t>(c.v));
      std::vector<torch::nn::Sequential> models;
      for (int r = 0; r < p; ++r) models.push_back(inPlaceModel());
      const test::RanksStep ranks = test::stepOnRanks(models, options, input, target, meanSquaredError);
      ASSERT_EQ(ranks.errors, "");
      ASSERT_TRUE(close(ranks.loss, expected.loss)) << ranks.loss << expected.loss;
      ASSERT_EQ(ranks.grads.size(), expected.grads.size());
      for (const auto& [name, grad] : expected.grads) ASSERT_TRUE(close(ranks.grads.at(name), grad)) << name;
    }
  }
}

}  // namespace
}  // namespace pipeprof
