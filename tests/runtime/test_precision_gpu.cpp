// CUDA tests of the training step (label gpu; they skip themselves without a CUDA device): under
// bf16 and fp16 autocast on cuda:0 every schedule trains as the unpartitioned model does under
// the same autocast (fp16 with its loss scaling), with fp32 weights and gradients; the model
// state held after the second step is the simulator's figure to the byte for every optimizer
// and precision; a CUDA profile taken under fp16 and AdamW predicts each partition's peak.
#include "cuda_test_util.h"
#include "model_state_measure.h"
#include "precision_reference.h"

#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/simulator/simulator.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace pipeprof {
namespace {

using test::adamwWithDecay;
using test::everyScheduleFamily;
using test::expectSameFp32Gradients;
using test::expectSameLosses;
using test::kCuda0;
using test::pipelineTraining;
using test::quickProfiling;
using test::referenceLosses;
using test::referenceStep;
using test::referenceTraining;
using test::ScheduleCase;
using test::smallAutocastModel;
using test::twoPartitionPipe;

const std::vector<torch::Device> kTwiceCuda0{kCuda0, kCuda0};
/// cuBLAS may pick another kernel on a partition's stream than on the default one, summing in
/// another order: looser than the CPU's 1e-6, and still under a third of what the last step's
/// loss moves in the wrong precision (ReducedPrecisionDiffersFromFp32OnCuda; fp16's moved 9e-5
/// of it on an H200).
constexpr double kRelative = 1e-5;

std::vector<double> cudaReferenceLosses(Precision precision) {
  return referenceLosses(referenceTraining(kCuda0, precision), adamwWithDecay());
}

TEST(PrecisionGpu, ReducedPrecisionDiffersFromFp32OnCuda) {
  PIPEPROF_REQUIRE_CUDA();
  const std::vector<double> fp32 = cudaReferenceLosses(Precision::Fp32);
  for (Precision precision : {Precision::Bf16, Precision::Fp16}) {
    const std::vector<double> reduced = cudaReferenceLosses(precision);
    EXPECT_GT(std::abs(fp32.back() - reduced.back()), 3 * kRelative * std::abs(fp32.back()))
        << precisionName(precision);
  }
}

TEST(PrecisionGpu, EveryScheduleTrainsOnCudaAsTheUnpartitionedModelUnderBf16AndFp16) {
  PIPEPROF_REQUIRE_CUDA();
  for (Precision precision : {Precision::Bf16, Precision::Fp16}) {
    const std::vector<double> expected = cudaReferenceLosses(precision);
    for (const ScheduleCase& schedule : everyScheduleFamily()) {
      const std::string what = std::string(precisionName(precision)) + " " + schedule.label();
      Model model = smallAutocastModel();
      try {
        const TrainingResult result =
            trainAndMeasure(model, pipelineTraining(referenceTraining(kCuda0, precision), schedule, kTwiceCuda0));
        expectSameLosses(result.losses, expected, what, kRelative);
      } catch (const std::exception& error) {
        ADD_FAILURE() << what << ": " << error.what();
      }
    }
  }
}

TEST(PrecisionGpu, Fp16GradientsOnCudaAreTheUnpartitionedModelsScaledInFp32) {
  PIPEPROF_REQUIRE_CUDA();
  constexpr double kScale = 65536.0;  // PyTorch's initial loss scale
  const test::ReferenceTraining fp16 = referenceTraining(kCuda0, Precision::Fp16);
  Model reference = smallAutocastModel();
  reference.sequential->to(kCuda0);
  const Batch batch = reference.makeBatch(fp16.batch, fp16.dataSeed);
  referenceStep(reference, batch, fp16, kScale);

  Model model = smallAutocastModel();
  Pipe pipe(model.sequential, twoPartitionPipe(fp16, kTwiceCuda0));
  pipe.step(batch.input.to(kCuda0), batch.target, model.loss, kScale);
  expectSameFp32Gradients(pipe.parameters(), reference.sequential->parameters(), kRelative);
}

TEST(PrecisionGpu, TheModelStateOnCudaIsWhatTheSimulatorChargesAfterTheSecondStep) {
  PIPEPROF_REQUIRE_CUDA();
  test::expectTheModelStateThatIsPredicted(kTwiceCuda0, kCuda0, {Precision::Fp32, Precision::Bf16, Precision::Fp16});
}

// Like PipeGpu.ACudaProfilePredictsEachPartitionsPeak, under fp16 autocast with AdamW: the cast
// copies, the optimizer's state and step, the loss scaling's unscale are in both.
TEST(PrecisionGpu, AnFp16AdamWProfilePredictsEachPartitionsPeakOnCuda) {
  PIPEPROF_REQUIRE_CUDA();
  OptimizerSpec optimizer = adamwWithDecay();
  LayerProfilerOptions profiling = quickProfiling(optimizer, Precision::Fp16, 32, kCuda0);
  profiling.warmupRuns = 1;
  Model profiled = test::twoWideLinears();
  const Profile profile = profileModel(profiled, profiling);

  TrainingOptions options = pipelineTraining(referenceTraining(kCuda0, Precision::Fp16),
                                             {ScheduleKind::OneFOneB, {2, 2}, 1, Checkpoint::Never}, kTwiceCuda0);
  options.batch = 64;
  options.chunks = 2;
  options.warmupSteps = 1;  // the measured step starts with the optimizer's state live
  options.steps = 2;
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = options;
  candidate.batch = options.batch;
  candidate.devices = {0, 0};
  SimulationOptions simulation;
  const Prediction predicted =
      simulate(profile, Cluster::uniform(1, std::nullopt, 0.0, 0, "cuda:"), candidate, simulation).prediction;

  clearLibraryWorkspaces({kCuda0});
  Model trained = test::twoWideLinears();
  const TrainingResult result = trainAndMeasure(trained, options);
  const std::vector<Bytes>& measured = result.measurement.peakBytes;
  ASSERT_EQ(measured.size(), 2U);
  ASSERT_EQ(predicted.peakBytes.size(), 2U);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_NEAR(static_cast<double>(predicted.peakBytes[j]), static_cast<double>(measured[j]),
                0.1 * static_cast<double>(measured[j]))
        << "partition " << j << ": predicted " << predicted.peakBytes[j] << ", measured " << measured[j];
  }
  clearLibraryWorkspaces({kCuda0});
}

}  // namespace
}  // namespace pipeprof
