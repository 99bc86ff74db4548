// Tests for the memory model: peaks per stage and their ops, closed forms per checkpoint mode.
#include "memory_timeline.h"

#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <string>

namespace pipeprof::test_memory_timeline {
namespace {

// One layer per stage: f 10, b 20, saved S 100, output O 10, workspace W 5, params 8
// (+ 8 of gradients: static 16), all per sample; one sample per micro-batch.
constexpr Bytes kS = 100;
constexpr Bytes kO = 10;
constexpr Bytes kW = 5;
constexpr Bytes kStatic = 16;
const test::LayerCosts kLayer{10, 20, kS, kO, kW, 8};

Prediction run(std::int64_t k, std::int64_t m, Checkpoint mode, const Cluster& cluster) {
  const Profile profile = test::uniformProfile(k, kLayer);
  return simulate(profile, cluster,
                  test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(k), 1), m, mode, m))
      .prediction;
}

// never: stage 0 keeps every micro-batch's saved tensors until its backward; the peak is
// reached while forward(M-1,0) runs (its saved tensors, its live output and its workspace).
TEST(MemoryModel, NeverGrowsLinearlyInMicroBatches) {
  for (std::int64_t k : {1, 2, 3}) {
    for (std::int64_t m : {1, 2, 4, 8}) {
      const Prediction p = run(k, m, Checkpoint::Never, test::freeCluster(k));
      EXPECT_EQ(p.peakBytes[0], kStatic + m * kS + kW) << "K=" << k << " M=" << m;
      EXPECT_EQ(p.peakOp[0], "forward(" + std::to_string(m - 1) + ",0)");
      if (k > 1) {
        // The last stage allocates the gradient of its input at the end of backward(M-1,K-1),
        // before that micro-batch's saved tensors are freed (here O > W: the profile's backward
        // workspace, which the gradient of the input is part of, does not cover it).
        EXPECT_EQ(p.peakBytes[static_cast<std::size_t>(k - 1)], kStatic + m * kS + kO);
        EXPECT_EQ(p.peakOp[static_cast<std::size_t>(k - 1)],
                  "backward(" + std::to_string(m - 1) + "," + std::to_string(k - 1) + ")");
      }
    }
  }
}

// always: the stored inputs (one boundary output per micro-batch) plus one micro-batch's
// saved tensors during its recompute. A single stage is the last stage: its output waits
// only for loss(i), which runs without a graph and frees it, so nothing is stored.
TEST(MemoryModel, AlwaysHoldsOneMicroBatchOfSavedTensorsPlusStoredInputs) {
  for (std::int64_t k : {1, 2, 3}) {
    for (std::int64_t m : {1, 2, 4, 8}) {
      const Prediction p = run(k, m, Checkpoint::Always, test::freeCluster(k));
      const Bytes stored = k == 1 ? 0 : m * kO;
      EXPECT_EQ(p.peakBytes[0], kStatic + stored + kS + kW) << "K=" << k << " M=" << m;
      EXPECT_EQ(p.peakOp[0], "recompute(" + std::to_string(m - 1) + ",0)");
    }
  }
}

// except_last: M-1 stored inputs plus the last micro-batch's saved tensors, at the end of
// forward(M-1,0) (none stored by a single stage: its losses freed them).
TEST(MemoryModel, ExceptLastKeepsTheLastMicroBatch) {
  for (std::int64_t k : {1, 2, 3}) {
    for (std::int64_t m : {2, 4, 8}) {
      const Prediction p = run(k, m, Checkpoint::ExceptLast, test::freeCluster(k));
      const Bytes stored = k == 1 ? 0 : (m - 1) * kO;
      EXPECT_EQ(p.peakBytes[0], kStatic + stored + kS + kW) << "K=" << k << " M=" << m;
      EXPECT_EQ(p.peakOp[0], "forward(" + std::to_string(m - 1) + ",0)");
    }
  }
}

// Inside one stage a forward builds up saved tensors layer by layer and a backward frees
// them last layer first, so a layer's workspace counts on top of what is live at that layer.
// Two layers a, b (per sample): saved 100 / 20, output 10 / 10, forward workspace 5 / 5,
// backward workspace 50 / 8; no parameters.
TEST(MemoryModel, AnOpPeaksAtItsBusiestLayer) {
  Profile profile = test::makeProfile({{10, 20, 100, 10, 5, 0}, {10, 20, 20, 10, 5, 0}});
  profile.layers[0].costs[0].backwardWorkspaceBytes = 50;
  profile.layers[1].costs[0].backwardWorkspaceBytes = 8;
  auto predict = [&](Checkpoint mode) {
    return simulate(profile, test::freeCluster(1), test::makeCandidate({2}, 1, mode, 1)).prediction;
  };
  // a's backward runs once b's saved tensors are freed: 100 + 20 - 20 + 50.
  const Prediction never = predict(Checkpoint::Never);
  EXPECT_EQ(never.peakBytes[0], 150);
  EXPECT_EQ(never.peakOp[0], "backward(0,0)");
  // Checkpointed, the same: the output kept for the loss (10) was freed by loss(0), which ran
  // without a graph, before recompute(0,0) made it again.
  const Prediction always = predict(Checkpoint::Always);
  EXPECT_EQ(always.peakBytes[0], 150);
  EXPECT_EQ(always.peakOp[0], "backward(0,0)");
  // A larger forward workspace of b: its forward peaks with everything saved before it.
  profile.layers[1].costs[0].forwardWorkspaceBytes = 45;
  const Prediction forwardPeak = predict(Checkpoint::Never);
  EXPECT_EQ(forwardPeak.peakBytes[0], 100 + 20 + 45);
  EXPECT_EQ(forwardPeak.peakOp[0], "forward(0,0)");
}

// A layer of several ops inside a stage lets its output and the gradient of it go once its
// first ops used them (a U-Net's Up: the ReLU that made its output, then two convolutions):
// its backward peaks at its inner workspace. The last layer of a stage that is not the last
// holds both to the backward's end, the gradient as a copy buffer counted beside: the workspace
// held, less that gradient. The layers of AnOpPeaksAtItsBusiestLayer, a's inner workspace 30.
TEST(MemoryModel, ALayerInsideAStagePeaksAtItsInnerWorkspace) {
  Profile profile = test::makeProfile({{10, 20, 100, 10, 5, 0}, {10, 20, 20, 10, 5, 0}});
  profile.layers[0].costs[0].backwardWorkspaceBytes = 50;
  profile.layers[1].costs[0].backwardWorkspaceBytes = 8;
  auto predict = [&](std::vector<std::int64_t> balance) {
    const auto devices = static_cast<std::int64_t>(balance.size());
    return simulate(profile, test::freeCluster(devices), test::makeCandidate(balance, 1, Checkpoint::Never, 1))
        .prediction;
  };
  const Prediction heldOnly = predict({1, 1});
  profile.layers[0].costs[0].innerBackwardWorkspaceBytes = 30;
  profile.layers[1].costs[0].innerBackwardWorkspaceBytes = 8;
  // One stage: a is inside it, 100 + 20 - 20 + 30 (was 150 with the held workspace).
  const Prediction one = predict({2});
  EXPECT_EQ(one.peakBytes[0], 130);
  EXPECT_EQ(one.peakOp[0], "backward(0,0)");
  // Two stages: a ends the first, which holds its output and the gradient received.
  EXPECT_EQ(predict({1, 1}).peakBytes, heldOnly.peakBytes);
}

// A stage keeps its output until its backward (the root of its graph, and the next stage's
// input): two one-layer stages, "a" saving nothing (a Linear whose output only the next ReLU
// reads) and "b" saving its output (a ReLU), each with output 10, f 10, b 20, no workspace.
const test::LayerCosts kSavesNothing{10, 20, 0, 10, 0, 0};
const test::LayerCosts kSavesOutput{10, 20, 10, 10, 0, 0};

Prediction runTwo(const test::LayerCosts& first, std::int64_t m, Checkpoint mode, ScheduleKind schedule) {
  Candidate candidate = test::makeCandidate({1, 1}, m, mode, m);
  candidate.schedule = schedule;
  return simulate(test::makeProfile({first, kSavesOutput}), test::freeCluster(2), candidate).prediction;
}

// never, GPipe, M = 4: stage 0 holds its 10-byte output per micro-batch although "a" saves
// nothing (40 once forward(3,0) runs; the model once said 10); stage 1's output is in its
// saved bytes (40), and backward(3,1) adds the gradient of its input (10) before freeing.
// 1F1B holds min(p - d, M) micro-batches: 20 on device 0, 10 + 10 on device 1.
TEST(MemoryModel, AStageKeepsItsOutputUntilItsBackward) {
  const Prediction gpipe = runTwo(kSavesNothing, 4, Checkpoint::Never, ScheduleKind::GPipe);
  EXPECT_EQ(gpipe.peakBytes, (std::vector<Bytes>{40, 50}));
  EXPECT_EQ(gpipe.peakOp, (std::vector<std::string>{"forward(3,0)", "backward(3,1)"}));
  const Prediction oneF1B = runTwo(kSavesNothing, 4, Checkpoint::Never, ScheduleKind::OneFOneB);
  EXPECT_EQ(oneF1B.peakBytes, (std::vector<Bytes>{20, 20}));
  EXPECT_EQ(oneF1B.peakOp, (std::vector<std::string>{"forward(1,0)", "backward(0,1)"}));
}

// The output counts once, whatever part of it the last layer's saved bytes already hold (its
// own graph saved it, or the next layer saved it as its input and the profiler charged it to
// the layer that allocated it): saved 0, 4 or 10 of an output of 10 all hold 10 per micro-batch.
// Saved bytes beyond the output (15) are other tensors: 15 per micro-batch.
TEST(MemoryModel, TheOutputIsNotCountedTwiceWhenSavedBytesHoldIt) {
  for (Bytes saved : {0, 4, 10}) {
    test::LayerCosts first = kSavesNothing;
    first.savedBytes = saved;
    EXPECT_EQ(runTwo(first, 4, Checkpoint::Never, ScheduleKind::GPipe).peakBytes[0], 40) << "saved " << saved;
  }
  test::LayerCosts more = kSavesNothing;
  more.savedBytes = 15;
  EXPECT_EQ(runTwo(more, 4, Checkpoint::Never, ScheduleKind::GPipe).peakBytes[0], 60);
}

// A profile that measured what of the output the graph keeps (output_saved_bytes) is read as it
// says: saved bytes of 10 that are another tensor (under bf16, a Linear's cast copy of its
// weight, saved by each micro-batch) leave the output of 10 to count too, 20 per micro-batch;
// the same saved bytes holding the output count 10.
TEST(MemoryModel, TheOutputsSavedPartIsTakenFromTheProfileWhereItWasMeasured) {
  auto gpipePeak = [](Bytes outputSaved) {
    Profile profile = test::makeProfile({{10, 20, 10, 10, 0, 0}, kSavesOutput});
    profile.layers[0].costs[0].outputSavedBytes = outputSaved;
    Candidate candidate = test::makeCandidate({1, 1}, 4, Checkpoint::Never, 4);
    candidate.schedule = ScheduleKind::GPipe;
    return simulate(profile, test::freeCluster(2), candidate).prediction.peakBytes[0];
  };
  EXPECT_EQ(gpipePeak(0), 80);
  EXPECT_EQ(gpipePeak(4), 64);
  EXPECT_EQ(gpipePeak(10), 40);
}

// A stage ending in a stash layer that passes on what it stashes (resnet's block stash, an
// identity): "a" saves its output (a ReLU, 10), "stash" saves nothing and stashes its input,
// popped by "pop" on stage 1; stage 0's output and the skip are a's output, one tensor. GPipe,
// M = 4, no workspaces. always: each forward stores 10 (the output; the skip adds nothing, it
// is freed first, by backward(i,1)), and recompute(3,0) holds a's 10 saved (U = 0: the stash
// allocated nothing) above 40, with a transient of 20 while it runs (the stash's output is
// counted as live there): 60, not 100 (20 stored per micro-batch, U 10). never: saved 10 and U
// 0 per micro-batch, 50 while forward(3,0) runs, not 80.
TEST(MemoryModel, AStashLayerThatPassesOnItsSkipHoldsItOnce) {
  Profile profile = test::makeProfile({kSavesOutput, {10, 20, 0, 10, 0, 0}, kSavesOutput});
  profile.skips.push_back({"s", 1, 2, 10, 0});
  auto predict = [&](Checkpoint mode) {
    return simulate(profile, test::freeCluster(2), test::makeCandidate({2, 1}, 4, mode, 4)).prediction;
  };
  const Prediction always = predict(Checkpoint::Always);
  EXPECT_EQ(always.peakBytes[0], 60);
  EXPECT_EQ(always.peakOp[0], "recompute(3,0)");
  const Prediction never = predict(Checkpoint::Never);
  EXPECT_EQ(never.peakBytes[0], 50);
  EXPECT_EQ(never.peakOp[0], "forward(3,0)");
  // A last layer that allocates its output (saves nothing of it, has a forward workspace of 1)
  // is not an alias: the skip holds its own 10 per micro-batch again, and U is its output:
  // 4 x 20 stored + 10 saved + 10 U + the recompute's workspace 1.
  profile.layers[1].costs[0].forwardWorkspaceBytes = 1;
  EXPECT_EQ(predict(Checkpoint::Always).peakBytes[0], 101);
}

// always, GPipe, M = 4, "a" with a backward workspace of 50. Stage 0: each forward stores its
// output for stage 1 (10 each, freed by backward(i,1)); recompute(3,0) runs in [50, 60] and
// keeps the recomputed output (10) until backward(3,0), which starts at 80 when backward(3,1)
// has freed the stored output of micro-batch 3: 3 x 10 stored + 10 recomputed + 50 - 10 (the
// workspace's gradient of a's output, which stage 1 holds) = 80 (70 before the recomputed
// output was counted). Stage 1 is the last: loss(i), without a graph,
// frees the output its forward kept, so it holds nothing between its forward and its recompute
// and peaks at backward(3,1): 10 saved + 10 gradient of its input = 20.
TEST(MemoryModel, ARecomputedOutputIsHeldUntilItsBackwardAndALossFreesTheLastStagesOutput) {
  test::LayerCosts first = kSavesNothing;
  Profile profile = test::makeProfile({first, kSavesOutput});
  profile.layers[0].costs[0].backwardWorkspaceBytes = 50;
  const Prediction p =
      simulate(profile, test::freeCluster(2), test::makeCandidate({1, 1}, 4, Checkpoint::Always, 4)).prediction;
  EXPECT_EQ(p.peakBytes, (std::vector<Bytes>{80, 20}));
  EXPECT_EQ(p.peakOp, (std::vector<std::string>{"backward(3,0)", "backward(3,1)"}));
}

// The loss on the last stage: two one-layer stages saving nothing (output 10 each), GPipe, M
// = 4, one sample per micro-batch; the loss saves 20 (a cast copy of the output), has a forward
// workspace of 5 and a backward peak of 30, f 3 and b 4. Letting its output go, each loss(i)
// peaks 25 above its start and leaves 20 - 10 held: stage 1 holds 20 per micro-batch, 95
// while loss(3) runs, 80 after it, and 110 in backward(3,1). Keeping its output (fp32 MSE),
// each holds 30: 125 in loss(3), 150 in backward(3,1).
Profile withLoss(bool keepsOutput) {
  Profile profile = test::makeProfile({kSavesNothing, kSavesNothing});
  // micro_batch, forward_ns, backward_ns, output, saved, forward and backward workspace
  profile.loss.costs = {CostSample{1, 3, 4, 4, 20, 5, 30}};
  profile.loss.keepsOutput = keepsOutput;
  return profile;
}

TEST(MemoryModel, TheLossHoldsItsGraphUntilTheLastStagesBackward) {
  auto predict = [](bool keepsOutput, Checkpoint mode) {
    return simulate(withLoss(keepsOutput), test::freeCluster(2), test::makeCandidate({1, 1}, 4, mode, 4)).prediction;
  };
  const Prediction letsGo = predict(false, Checkpoint::Never);
  EXPECT_EQ(letsGo.peakBytes[1], 110);
  EXPECT_EQ(letsGo.peakOp[1], "backward(3,1)");
  const Prediction keeps = predict(true, Checkpoint::Never);
  EXPECT_EQ(keeps.peakBytes[1], 150);
  EXPECT_EQ(keeps.peakOp[1], "backward(3,1)");
  // Stage 0 does not see it.
  EXPECT_EQ(letsGo.peakBytes[0], keeps.peakBytes[0]);
  // Its time is on the critical path: stage 1 runs F, loss alternately (F(i+1) waits for L(i)),
  // its forwards end at 59 + loss(3) 3 = 62, then four backwards of 20 + 4, then backward(0,0):
  // 62 + 96 + 20 = 178 (150 without a loss).
  EXPECT_EQ(letsGo.iterationNs, 178);
  // Checkpointed, each loss runs without a graph (25 above the output it frees) and
  // recompute(i,1) computes it again with one: 10 recomputed output + 25, then 20 held when
  // backward(i,1) starts, 50 in it; from backward(2,1) on, 10 more: the gradient of stage 1's
  // input for micro-batch 3, held until backward(3,0), which is still running.
  const Prediction always = predict(false, Checkpoint::Always);
  EXPECT_EQ(always.peakBytes[1], 60);
  EXPECT_EQ(always.peakOp[1], "backward(2,1)");
}

// Over a costly link every copy allocates its bytes on the destination at copy start: the
// activation copy on stage 1 (held until backward(0,1) ends), the gradient copy on
// stage 0 (held until backward(0,0) ends). That gradient is the one stage 0's backward
// starts from: its backward workspace (5, less than the output gradient of 10 the profiler's
// workspace includes) adds nothing on top, so stage 0 peaks when the copy starts.
TEST(MemoryModel, CopyBuffersCountOnTheDestination) {
  const Prediction free = run(2, 1, Checkpoint::Never, test::freeCluster(2));
  EXPECT_EQ(free.peakBytes, (std::vector<Bytes>{kStatic + kS + kW, kStatic + kS + kO}));
  EXPECT_EQ(free.peakOp, (std::vector<std::string>{"forward(0,0)", "backward(0,1)"}));
  const Prediction costly = run(2, 1, Checkpoint::Never, Cluster::uniform(2, std::nullopt, 0.0, 3));
  EXPECT_EQ(costly.peakBytes, (std::vector<Bytes>{kStatic + kS + kO, kStatic + kS + 2 * kO}));
  EXPECT_EQ(costly.peakOp, (std::vector<std::string>{"grad-copy(0,1->0)", "backward(0,1)"}));
}

// A checkpointed micro-batch saves nothing in its forward, so the whole skip tensor stays on
// its stash stage from forward(i,0) to backward(i,2) (the pop's recompute needs it). The
// popped skip is a leaf on stage 2: backward(i,2) makes its gradient there (the skip's
// size, on top of the backward's peak), held until backward(i,0) has used it.
TEST(MemoryModel, ACheckpointedSkipIsHeldUntilThePopStagesBackward) {
  Profile profile = test::uniformProfile(3, kLayer);
  const Candidate candidate = test::makeCandidate({1, 1, 1}, 1, Checkpoint::Always, 1);
  const Prediction without = simulate(profile, test::freeCluster(3), candidate).prediction;
  profile.skips.push_back({"enc", 0, 2, 1000, 0});
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult with = simulate(profile, test::freeCluster(3), candidate, options);
  EXPECT_EQ(with.prediction.peakBytes[0], without.peakBytes[0] + 1000);
  EXPECT_EQ(with.prediction.peakBytes[1], without.peakBytes[1]);
  EXPECT_EQ(with.prediction.peakBytes[2], without.peakBytes[2] + 1000);
  EXPECT_EQ(with.prediction.peakOp[2], "backward(0,2)");
  const TimeNs backward0End = test::endOf(with.trace, "backward(0,0)");
  for (const auto& [timeNs, value] : test::counterOf(with.trace, "dev:2")) {
    if (timeNs >= backward0End) {
      EXPECT_LT(value, 1000.0) << timeNs;
    }
  }
  const TimeNs backward2End = test::endOf(with.trace, "backward(0,2)");
  ASSERT_GT(backward2End, 0);
  for (const auto& [timeNs, value] : test::counterOf(with.trace, "dev:0")) {
    if (timeNs > 10 && timeNs < backward2End) {
      EXPECT_GE(value, 1000.0) << timeNs;
    } else if (timeNs >= backward2End) {
      EXPECT_LT(value, 1000.0) << timeNs;
    }
  }
}

// Not checkpointed, the backward graph saves what it needs of the skip (in a layer's saved
// bytes); the stash holds the rest, its unsaved bytes, until the pop's forward has used it.
TEST(MemoryModel, AnUnsavedSkipIsHeldUntilThePopStagesForward) {
  Profile profile = test::uniformProfile(3, kLayer);
  const Candidate candidate = test::makeCandidate({1, 1, 1}, 1, Checkpoint::Never, 1);
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult without = simulate(profile, test::freeCluster(3), candidate, options);
  profile.skips.push_back({"enc", 0, 2, 1000, 400});
  const SimulationResult with = simulate(profile, test::freeCluster(3), candidate, options);
  const TimeNs forward0End = test::endOf(with.trace, "forward(0,0)");
  const TimeNs forward2End = test::endOf(with.trace, "forward(0,2)");
  ASSERT_GT(forward0End, 0);
  ASSERT_GT(forward2End, forward0End);
  const std::map<TimeNs, double> before = test::counterOf(without.trace, "dev:0");
  const std::map<TimeNs, double> after = test::counterOf(with.trace, "dev:0");
  ASSERT_FALSE(before.empty());
  for (const auto& [timeNs, value] : after) {
    auto sample = before.upper_bound(timeNs);  // the counter is a step function: its value then
    ASSERT_NE(sample, before.begin()) << timeNs;
    const double held = timeNs >= forward0End && timeNs < forward2End ? 400.0 : 0.0;
    EXPECT_EQ(value - std::prev(sample)->second, held) << timeNs;
  }
}

// A skip routed within one stage lives inside its forward (a recompute stashes it again).
TEST(MemoryModel, ASkipWithinOneStageHoldsNothingBetweenOps) {
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::Never}) {
    Profile profile = test::uniformProfile(3, kLayer);
    const Candidate candidate = test::makeCandidate({2, 1}, 2, mode, 2);
    const Prediction without = simulate(profile, test::freeCluster(2), candidate).prediction;
    profile.skips.push_back({"local", 0, 1, 1000, 1000});
    const Prediction with = simulate(profile, test::freeCluster(2), candidate).prediction;
    EXPECT_EQ(with.peakBytes, without.peakBytes) << checkpointName(mode);
  }
}

TEST(MemoryModel, EverythingDynamicIsFreedAtTheEndOfTheStep) {
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    Profile profile = test::uniformProfile(3, kLayer);
    profile.skips.push_back({"enc", 0, 2, 7, 3});
    SimulationOptions options;
    options.recordTrace = true;
    const SimulationResult result = simulate(profile, Cluster::uniform(3, std::nullopt, 1e9, 2, "dev"),
                                             test::makeCandidate({1, 1, 1}, 3, mode, 5), options);
    std::map<std::string, double> last;
    for (const TraceEvent& e : result.trace.events) {
      if (e.kind == EventKind::Counter) last[e.device] = e.value;
    }
    ASSERT_EQ(last.size(), 3u);
    for (const auto& [device, value] : last) EXPECT_EQ(value, static_cast<double>(kStatic)) << device;
  }
}

TEST(MemoryModel, CapacityDecidesFit) {
  // Peak of stage 0 in never with M = 4: 16 + 400 + 5 = 421; stage 1: 16 + 400 + 10 = 426.
  const Prediction tight = run(2, 4, Checkpoint::Never, test::freeCluster(2, Bytes{425}));
  EXPECT_FALSE(tight.fits);
  EXPECT_EQ(tight.overflowDevices, (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(run(2, 4, Checkpoint::Never, test::freeCluster(2, Bytes{426})).fits);
  // Two stages on one device: their peaks are summed (an upper bound).
  const Profile profile = test::uniformProfile(2, kLayer);
  Candidate candidate = test::makeCandidate({1, 1}, 4, Checkpoint::Never, 4);
  candidate.devices = {0, 0};
  const Prediction shared = simulate(profile, test::freeCluster(1, Bytes{846}), candidate).prediction;
  EXPECT_FALSE(shared.fits);
  EXPECT_EQ(shared.overflowDevices, (std::vector<std::int64_t>{0}));
}

TEST(MemoryTimeline, AllocationsBeforeReleasesAndFirstPeakOp) {
  sim::CompiledSchedule compiled;
  compiled.effects = {{0, 0}, {0, 1}, {1, 0}};
  const std::vector<Bytes> bytes{50, 30};
  const std::vector<std::int32_t> devices{0, 0};
  const std::vector<Bytes> statics{0, 0};
  sim::MemoryTimeline memory;
  memory.reset(devices, statics, 1, true);
  memory.allocate(compiled, {0, 2}, bytes.data(), 7, 10);  // +50 +30 on stage 0
  memory.release(compiled, {1, 2}, bytes.data(), 10);      // -30
  memory.allocate(compiled, {1, 2}, bytes.data(), 8, 20);  // +30: 80 again, not a new peak
  memory.allocate(compiled, {2, 3}, bytes.data(), 9, 20);  // stage 1
  EXPECT_EQ(memory.peakDynamic(0), 80);
  EXPECT_EQ(memory.peakOp(0), 7);
  EXPECT_EQ(memory.peakDynamic(1), 50);
  EXPECT_EQ(memory.peakOp(1), 9);
  EXPECT_EQ(memory.currentDynamic(0), 80);
  // One counter value per instant: 50 at t=10, 130 at t=20 (device 0 holds both stages).
  ASSERT_EQ(memory.samples().size(), 3u);
  EXPECT_EQ(memory.samples()[1].bytes, 50);
  EXPECT_EQ(memory.samples()[2].bytes, 130);
}

}  // namespace
}  // namespace pipeprof::test_memory_timeline
