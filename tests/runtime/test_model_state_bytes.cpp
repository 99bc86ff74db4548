// The model state a device holds between steps -- parameters, gradients, the optimizer's state --
// measured by the runtime after the second step equals the simulator's figure to the byte, for
// every optimizer and precision.
#include "model_state_measure.h"

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/simulator.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using test::measuredModelState;
using test::quickProfiling;

constexpr std::int64_t kStateBatch = 8;
const std::vector<torch::Device> kTwoCpuDevices{torch::kCPU, torch::kCPU};

TEST(ModelStateBytes, TheRuntimeHoldsWhatTheSimulatorChargesAfterTheSecondStep) {
  test::expectTheModelStateThatIsPredicted(kTwoCpuDevices, torch::kCPU, {Precision::Fp32, Precision::Bf16});
}

TEST(ModelStateBytes, ATiedEmbeddingIsOneCopyPerDeviceThatHoldsIt) {
  ModelOptions options;
  options.width = 32;
  options.depth = 1;  // embed block0 norm head
  options.tieEmbeddings = true;
  OptimizerSpec optimizer;
  optimizer.kind = OptimizerKind::AdamW;
  Model profiled = buildModel("gpt", options);
  const Profile profile = profileModel(profiled, quickProfiling(optimizer, Precision::Fp32, kStateBatch / 2));
  // Two devices: the head's holds a replica. One device: both layers hold the one tensor.
  for (const std::vector<std::int64_t>& balance : {std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{4}}) {
    PipelineShape shape;
    shape.balance = balance;
    shape.chunks = 2;
    shape.schedule = ScheduleKind::OneFOneB;
    Candidate candidate;
    static_cast<PipelineShape&>(candidate) = shape;
    candidate.batch = kStateBatch;
    const std::vector<Bytes> predicted = modelStateBytes(profile, candidate);
    Model trained = buildModel("gpt", options);
    const std::vector<Bytes> measured =
        measuredModelState(trained, shape, kTwoCpuDevices, optimizer, Precision::Fp32, kStateBatch, 2);
    ASSERT_EQ(measured.size(), predicted.size());
    for (std::size_t d = 0; d < measured.size(); ++d) {
      EXPECT_EQ(measured[d], predicted[d]) << "balance of " << balance.size() << " stages, device " << d;
    }
  }
}

}  // namespace
}  // namespace pipeprof
