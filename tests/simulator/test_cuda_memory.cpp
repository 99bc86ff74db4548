// Tests for the memory model on a CUDA profile: library workspaces per stage and the caching allocator's blocks.
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipeprof::test_cuda_memory {
namespace {

// One layer per stage, every size a whole number of 512-byte blocks (the allocator's
// rounding changes none of them): saved S, output O < S, workspace W, params P (+ P of
// gradients), per sample; one sample per micro-batch.
constexpr Bytes kS = 200 * 512;
constexpr Bytes kO = 20 * 512;
constexpr Bytes kW = 10 * 512;
constexpr Bytes kP = 16 * 512;
constexpr Bytes kStatic = 2 * kP;
constexpr Bytes kLibraryWorkspace = 32 * 1024 * 1024 + 512;  // cuBLAS's 32 MiB and a little
const test::LayerCosts kLayer{10, 20, kS, kO, kW, kP};

Profile onCuda(Profile profile, Bytes workspace) {
  profile.environment.deviceType = "cuda";
  profile.libraryWorkspaceBytes = workspace;
  return profile;
}

Prediction run(const Profile& profile, std::int64_t m, Checkpoint mode, bool training = true) {
  const auto k = profile.layerCount();
  SimulationOptions options;
  options.training = training;
  return simulate(profile, test::freeCluster(k),
                  test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(k), 1), m, mode, m), options)
      .prediction;
}

// A stage's forward runs on its device's worker thread and its backward on the autograd
// engine's thread for the device, both on the stage's stream: two workspaces per stage, held
// the whole step, so every peak moves by exactly 2 W and nothing else (op, timing) does.
TEST(CudaMemoryModel, EveryStageHoldsTwoLibraryWorkspacesWhenTraining) {
  const Profile cpu = test::uniformProfile(2, kLayer);
  const Profile cuda = onCuda(cpu, kLibraryWorkspace);
  for (Checkpoint mode : {Checkpoint::Never, Checkpoint::Always, Checkpoint::ExceptLast}) {
    for (std::int64_t m : {1, 2, 4}) {
      const Prediction before = run(cpu, m, mode);
      const Prediction after = run(cuda, m, mode);
      ASSERT_EQ(after.peakBytes.size(), 2u);
      for (std::size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(after.peakBytes[j], before.peakBytes[j] + 2 * kLibraryWorkspace) << "j=" << j << " M=" << m;
      }
      EXPECT_EQ(after.peakOp, before.peakOp);
      EXPECT_EQ(after.iterationNs, before.iterationNs);
    }
  }
  // The closed forms of docs/simulator.md with the workspaces added: never, stage 0.
  EXPECT_EQ(run(cuda, 4, Checkpoint::Never).peakBytes[0], kStatic + 4 * kS + kW + 2 * kLibraryWorkspace);
  EXPECT_EQ(run(cuda, 4, Checkpoint::Always).peakBytes[0], kStatic + 4 * kO + kS + kW + 2 * kLibraryWorkspace);
}

// Two stages on one pipeline device (interleaved, v = 2) each have their own stream, so the
// device holds four workspaces.
TEST(CudaMemoryModel, StagesSharingADeviceHoldTheirOwnWorkspaces) {
  const Profile cpu = test::uniformProfile(4, kLayer);
  const Profile cuda = onCuda(cpu, kLibraryWorkspace);
  Candidate candidate = test::makeCandidate({1, 1, 1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  const Prediction before = simulate(cpu, test::freeCluster(2), candidate).prediction;
  const Prediction after = simulate(cuda, test::freeCluster(2), candidate).prediction;
  ASSERT_EQ(after.peakBytes.size(), 2u);
  for (std::size_t d = 0; d < 2; ++d) EXPECT_EQ(after.peakBytes[d], before.peakBytes[d] + 4 * kLibraryWorkspace);
}

// A forward-only step launches on the worker thread alone: one workspace per stage.
TEST(CudaMemoryModel, AForwardOnlyStageHoldsOneWorkspace) {
  const Profile cpu = test::uniformProfile(2, kLayer);
  const Profile cuda = onCuda(cpu, kLibraryWorkspace);
  const Prediction before = run(cpu, 2, Checkpoint::Never, false);
  const Prediction after = run(cuda, 2, Checkpoint::Never, false);
  for (std::size_t j = 0; j < 2; ++j) EXPECT_EQ(after.peakBytes[j], before.peakBytes[j] + kLibraryWorkspace);
}

// A CPU profile is charged no workspace (even one set by hand) and no rounding: sizes that are
// not whole blocks stay as they are.
TEST(CudaMemoryModel, ACpuProfileIsUnchanged) {
  const test::LayerCosts odd{10, 20, 100, 10, 5, 8};
  Profile cpu = test::uniformProfile(2, odd);
  const Prediction plain = run(cpu, 2, Checkpoint::Never);
  cpu.libraryWorkspaceBytes = kLibraryWorkspace;
  const Prediction withField = run(cpu, 2, Checkpoint::Never);
  EXPECT_EQ(withField.peakBytes, plain.peakBytes);
  EXPECT_EQ(plain.peakBytes, (std::vector<Bytes>{16 + 2 * 100 + 5, 16 + 2 * 100 + 10}));
}

// On CUDA every size is what the caching allocator hands out: a tensor (an output, hence a
// boundary gradient and a copy buffer) is one block, a figure summing tensors (saved bytes,
// workspaces, parameters, gradients) whole 512-byte blocks. Saved 1500 -> 1536, output 700 ->
// 1024, workspace 5 -> 512, params 8 -> 512 and gradients 8 -> 512.
TEST(CudaMemoryModel, SizesAreRoundedToAllocatorBlocks) {
  const test::LayerCosts odd{10, 20, 1500, 700, 5, 8};
  const Profile cpu = test::uniformProfile(2, odd);
  const Profile cuda = onCuda(cpu, 0);
  // never, M = 1: stage 0 peaks at P + S + W, the last one at P + S + max(W, O).
  EXPECT_EQ(run(cpu, 1, Checkpoint::Never).peakBytes, (std::vector<Bytes>{16 + 1500 + 5, 16 + 1500 + 700}));
  EXPECT_EQ(run(cuda, 1, Checkpoint::Never).peakBytes, (std::vector<Bytes>{1024 + 1536 + 512, 1024 + 1536 + 1024}));
  // A copy buffer is a block, but the copy moves the tensor's own bytes: 700 bytes at 1 byte/ns
  // (the slow-link closed form, 2 (f + b) + 2 M c).
  const Candidate candidate = test::makeCandidate({1, 1}, 1, Checkpoint::Never, 1);
  const Cluster slow = Cluster::uniform(2, std::nullopt, 1e9, 0);
  const Prediction cudaSlow = simulate(cuda, slow, candidate).prediction;
  EXPECT_EQ(cudaSlow.iterationNs, 2 * (10 + 20) + 2 * 700);
  EXPECT_EQ(cudaSlow.iterationNs, simulate(cpu, slow, candidate).prediction.iterationNs);
  EXPECT_EQ(cudaSlow.peakBytes[1], 1024 + 1536 + 1024 + 1024);  // + the activation copy's block
}

}  // namespace
}  // namespace pipeprof::test_cuda_memory
