// Tests for simulate(): closed-form iteration times, contention, skips, validation, determinism, trace.
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pipeprof::test_simulator {
namespace {

using test::LayerCosts;

constexpr TimeNs kF = 10;  // forward per stage per micro-batch
constexpr TimeNs kB = 20;  // backward per stage per micro-batch

Prediction run(std::int64_t k, std::int64_t m, Checkpoint mode, const Cluster& cluster,
               const LayerCosts& costs = {kF, kB, 0, 0, 0, 0}) {
  const Profile profile = test::uniformProfile(k, costs);
  return simulate(profile, cluster,
                  test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(k), 1), m, mode, m))
      .prediction;
}

// K equal stages, M micro-batches, zero-cost links, mode never: the classic GPipe
// diagram. Forward(i,j) runs in [(i+j)f, (i+j+1)f]; backward(i,j) ends at
// T0 + (M-1-i + K-1-j + 1) b with T0 = (M+K-1) f; the last one is backward(0,0).
TEST(SimulateClosedForm, NeverIsMPlusKMinusOneTimesFPlusB) {
  for (std::int64_t k = 1; k <= 4; ++k) {
    for (std::int64_t m : {1, 2, 3, 5, 8}) {
      const Prediction p = run(k, m, Checkpoint::Never, test::freeCluster(k));
      EXPECT_EQ(p.iterationNs, (m + k - 1) * (kF + kB)) << "K=" << k << " M=" << m;
      ASSERT_EQ(p.busyNs.size(), static_cast<std::size_t>(k));
      for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, m * (kF + kB));
      const double idle = 1.0 - static_cast<double>(m * (kF + kB)) / static_cast<double>((m + k - 1) * (kF + kB));
      EXPECT_DOUBLE_EQ(p.bubbleFraction, idle);
      EXPECT_DOUBLE_EQ(p.samplesPerS, static_cast<double>(m) / (static_cast<double>(p.iterationNs) * 1e-9));
      EXPECT_TRUE(p.fits);
    }
  }
}

// Mode always: recompute(i,j) starts right after backward(i+1,j) and ends exactly when the
// gradient of micro-batch i arrives from stage j+1, so each stage's backward chain is
// stretched by f per micro-batch: iteration = (M+K-1)(f+b) + M f (derivation in docs).
TEST(SimulateClosedForm, AlwaysAddsOneForwardPerMicroBatch) {
  for (std::int64_t k = 1; k <= 4; ++k) {
    for (std::int64_t m : {1, 2, 3, 5, 8}) {
      const Prediction p = run(k, m, Checkpoint::Always, test::freeCluster(k));
      EXPECT_EQ(p.iterationNs, (m + k - 1) * (kF + kB) + m * kF) << "K=" << k << " M=" << m;
      for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, m * (2 * kF + kB));
    }
  }
}

// except_last: the last micro-batch is not recomputed: iteration = (M+K-1)(f+b) + (M-1) f.
TEST(SimulateClosedForm, ExceptLastAddsOneForwardPerCheckpointedMicroBatch) {
  for (std::int64_t k = 1; k <= 4; ++k) {
    for (std::int64_t m : {1, 2, 3, 5, 8}) {
      const Prediction p = run(k, m, Checkpoint::ExceptLast, test::freeCluster(k));
      EXPECT_EQ(p.iterationNs, (m + k - 1) * (kF + kB) + (m - 1) * kF) << "K=" << k << " M=" << m;
      for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, m * (kF + kB) + (m - 1) * kF);
    }
  }
}

// A checkpointed micro-batch's forward runs without a graph, g <= f, its recompute with one:
// the forwards' diagonal takes (M+K-1) g, the backward chain as above, so iteration =
// (M+K-1)(g+b) + M f; except_last's last micro-batch keeps its graph, and its forward takes f.
TEST(SimulateClosedForm, ACheckpointedForwardRunsWithoutAGraphAndTheRecomputeWithOne) {
  constexpr TimeNs kG = 6;
  for (std::int64_t k = 1; k <= 4; ++k) {
    for (std::int64_t m : {1, 2, 3, 5, 8}) {
      Profile profile = test::uniformProfile(k, {kF, kB, 0, 0, 0, 0});
      for (LayerProfile& layer : profile.layers) layer.costs.front().forwardNoGradNs = kG;
      const std::vector<std::int64_t> balance(static_cast<std::size_t>(k), 1);
      const Prediction always =
          simulate(profile, test::freeCluster(k), test::makeCandidate(balance, m, Checkpoint::Always, m)).prediction;
      EXPECT_EQ(always.iterationNs, (m + k - 1) * (kG + kB) + m * kF) << "K=" << k << " M=" << m;
      for (TimeNs busy : always.busyNs) EXPECT_EQ(busy, m * (kG + kF + kB));
      const Prediction exceptLast =
          simulate(profile, test::freeCluster(k), test::makeCandidate(balance, m, Checkpoint::ExceptLast, m))
              .prediction;
      for (TimeNs busy : exceptLast.busyNs) EXPECT_EQ(busy, (m - 1) * (kG + kF) + kF + m * kB);
      const Prediction never =
          simulate(profile, test::freeCluster(k), test::makeCandidate(balance, m, Checkpoint::Never, m)).prediction;
      EXPECT_EQ(never.iterationNs, (m + k - 1) * (kF + kB)) << "every forward keeps its graph";
    }
  }
}

// Every boundary copy costs c <= min(f, b) (latency only): forward(i,j) starts at
// i f + j (f + c) and backward(i,j) at T0 + (M-1-i) b + (K-1-j)(b + c), so
// iteration = M (f + b) + (K-1)(f + b + 2c).
TEST(SimulateClosedForm, CopiesAddTwoCopiesPerBoundary) {
  constexpr TimeNs kC = 7;
  for (std::int64_t k = 1; k <= 4; ++k) {
    for (std::int64_t m : {1, 2, 4, 6}) {
      const Cluster cluster = Cluster::uniform(k, std::nullopt, 0.0, kC);
      const Prediction p = run(k, m, Checkpoint::Never, cluster, {kF, kB, 0, 100, 0, 0});
      EXPECT_EQ(p.iterationNs, m * (kF + kB) + (k - 1) * (kF + kB + 2 * kC)) << "K=" << k << " M=" << m;
      for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, m * (kF + kB));
    }
  }
}

// A slow link (c >= max(f, b)) between two stages: copies serialise on the link, so
// forward(M-1,1) ends at 2f + M c and the gradients reach stage 0 one per c:
// iteration = 2 (f + b) + 2 M c.
TEST(SimulateClosedForm, SlowLinkIsTheBottleneck) {
  constexpr TimeNs kC = 50;
  for (std::int64_t m : {1, 2, 4, 7}) {
    const Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, kC);
    const Prediction p = run(2, m, Checkpoint::Never, cluster, {kF, kB, 0, 100, 0, 0});
    EXPECT_EQ(p.iterationNs, 2 * (kF + kB) + 2 * m * kC) << "M=" << m;
  }
  // The same through bandwidth: 1 byte per ns, 50-byte boundaries.
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 1e9, 0);
  EXPECT_EQ(run(2, 4, Checkpoint::Never, cluster, {kF, kB, 0, 50, 0, 0}).iterationNs, 2 * (kF + kB) + 2 * 4 * 50);
}

// A worker that sleeps waiting for another device wakes w after the data is there
// (Cluster::wakeLatencyNs, w < f): stage j's first forward starts j (f + w), and its later
// forwards find it busy when their input arrives, so forward(i,j) starts (i + j) f + j w. Each
// stage's first backward waits for the gradient while idle since its forwards, so the backward
// chain of stage j is late by (K-1-j)(b + w): iteration = (M+K-1)(f+b) + 2 (K-1) w, busy as
// before.
TEST(SimulateClosedForm, AWorkerWokenByAnotherDeviceStartsItsOpAWakeLatencyLater) {
  constexpr TimeNs kW = 3;
  for (std::int64_t k = 1; k <= 4; ++k) {
    for (std::int64_t m : {1, 2, 3, 5, 8}) {
      Cluster cluster = test::freeCluster(k);
      cluster.wakeLatencyNs = kW;
      const Prediction p = run(k, m, Checkpoint::Never, cluster);
      EXPECT_EQ(p.iterationNs, (m + k - 1) * (kF + kB) + 2 * (k - 1) * kW) << "K=" << k << " M=" << m;
      for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, m * (kF + kB));
    }
  }
}

// The loss's cold start c (LossProfile::coldStartNs): a step's first loss op takes the profiled
// l, each later one l - c (never below 0), and the last stage's recompute computes the loss again
// as a later call. One stage, M micro-batches, GPipe: the device runs every op in turn, so the
// step is their sum: never M (f + b) + l + (M-1)(l - c); always adds M recomputes of f + (l - c).
TEST(SimulateClosedForm, AStepsFirstLossPaysTheLossColdStart) {
  constexpr TimeNs kL = 9;
  for (TimeNs coldStart : {0, 4, 12}) {
    const TimeNs later = std::max<TimeNs>(0, kL - coldStart);
    for (std::int64_t m : {1, 2, 3, 8}) {
      Profile profile = test::uniformProfile(1, {kF, kB, 0, 0, 0, 0});
      CostSample loss;
      loss.microBatch = 1;
      loss.forwardNs = kL;
      profile.loss.costs = {loss};
      profile.loss.coldStartNs = coldStart;
      auto step = [&](Checkpoint mode) {
        return simulate(profile, test::freeCluster(1), test::makeCandidate({1}, m, mode, m)).prediction.iterationNs;
      };
      const std::string at = "c=" + std::to_string(coldStart) + " M=" + std::to_string(m);
      EXPECT_EQ(step(Checkpoint::Never), m * (kF + kB) + kL + (m - 1) * later) << at;
      EXPECT_EQ(step(Checkpoint::Always), m * (kF + kB) + kL + (m - 1) * later + m * (kF + later)) << at;
    }
  }
}

TEST(Simulate, StagesOnOneDeviceShareIt) {
  const Profile profile = test::uniformProfile(2, {kF, kB, 0, 0, 0, 0});
  Candidate candidate = test::makeCandidate({1, 1}, 4, Checkpoint::Never, 4);
  candidate.devices = {0, 0};
  const Prediction p = simulate(profile, test::freeCluster(1), candidate).prediction;
  EXPECT_EQ(p.iterationNs, 2 * 4 * (kF + kB));  // one device does all the work, never idle
  EXPECT_EQ(p.busyNs, (std::vector<TimeNs>{4 * (kF + kB), 4 * (kF + kB)}));
}

TEST(Simulate, RelativeSpeedDividesComputeTime) {
  const Profile profile = test::uniformProfile(1, {kF, kB, 0, 0, 0, 0});
  Cluster cluster = test::freeCluster(1);
  cluster.devices[0].relativeSpeed = 2.0;
  const Prediction p = simulate(profile, cluster, test::makeCandidate({1}, 2, Checkpoint::Never, 2)).prediction;
  EXPECT_EQ(p.iterationNs, 2 * (kF + kB) / 2);
}

TEST(Simulate, UnevenMicroBatchesFollowTorchChunk) {
  const Profile profile = test::uniformProfile(1, {kF, kB, 0, 0, 0, 0});
  // 10 samples in 4 chunks: 3, 3, 3, 1 -- one stage runs them back to back.
  EXPECT_EQ(simulate(profile, test::freeCluster(1), test::makeCandidate({1}, 4, Checkpoint::Never, 10))
                .prediction.iterationNs,
            10 * (kF + kB));
  // 3 samples in 8 chunks: only 3 micro-batches of 1 exist, so 2 stages take (3+1)(f+b).
  const Profile two = test::uniformProfile(2, {kF, kB, 0, 0, 0, 0});
  EXPECT_EQ(
      simulate(two, test::freeCluster(2), test::makeCandidate({1, 1}, 8, Checkpoint::Never, 3)).prediction.iterationNs,
      4 * (kF + kB));
  // except_last over the 3 existing micro-batches recomputes 2 of them.
  EXPECT_EQ(simulate(two, test::freeCluster(2), test::makeCandidate({1, 1}, 8, Checkpoint::ExceptLast, 3))
                .prediction.iterationNs,
            4 * (kF + kB) + 2 * kF);
}

TEST(Simulate, StageCostsSumTheirLayers) {
  // Layers of 10/20, 30/40, 50/60 ns; balance [2,1] gives f = (40, 50), b = (60, 60).
  const Profile profile = test::makeProfile({{10, 20, 0, 0, 0, 0}, {30, 40, 0, 0, 0, 0}, {50, 60, 0, 0, 0, 0}});
  const Prediction p =
      simulate(profile, test::freeCluster(2), test::makeCandidate({2, 1}, 1, Checkpoint::Never, 1)).prediction;
  EXPECT_EQ(p.iterationNs, 40 + 50 + 60 + 60);
  EXPECT_EQ(p.busyNs, (std::vector<TimeNs>{100, 110}));
}

// Skip route from layer 0 to layer 2 over three one-layer stages, one micro-batch, links
// of 1 byte/ns: the 500-byte skip copy (0->2) is slower than the two 10-byte boundary copies
// plus forward(0,1), so forward(0,2) starts at f + 500; the skip gradient copy back (2->0) is
// likewise the last thing stage 0 waits for: iteration = 2f + 2b + 2 * 500.
TEST(Simulate, SkipCopiesAreExactlyAddedToTheCriticalPath) {
  Profile profile = test::uniformProfile(3, {kF, kB, 0, 10, 0, 0});
  profile.skips.push_back({"enc", 0, 2, 500});
  const Cluster cluster = Cluster::uniform(3, std::nullopt, 1e9, 0);
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result =
      simulate(profile, cluster, test::makeCandidate({1, 1, 1}, 1, Checkpoint::Never, 1), options);
  EXPECT_EQ(result.prediction.iterationNs, 2 * kF + 2 * kB + 2 * 500);
  int skipCopies = 0;
  for (const TraceEvent& event : result.trace.events) {
    if (event.kind != EventKind::Span || event.phase != Phase::SkipCopy) continue;
    ++skipCopies;
    EXPECT_EQ(event.durationNs, 500) << event.name;
    EXPECT_EQ(event.bytes, 500) << event.name;
  }
  EXPECT_EQ(skipCopies, 2);
  // Without the skip the same pipeline takes 3 (f + b) + 4 boundary copies of 10 ns.
  profile.skips.clear();
  EXPECT_EQ(simulate(profile, cluster, test::makeCandidate({1, 1, 1}, 1, Checkpoint::Never, 1)).prediction.iterationNs,
            3 * (kF + kB) + 4 * 10);
}

// A skip route inside one stage needs no copy: the pipeline is as without it.
TEST(Simulate, SkipWithinOneStageAddsNoCopies) {
  Profile profile = test::uniformProfile(4, {kF, kB, 0, 10, 0, 0});
  profile.skips.push_back({"local", 0, 1, 500});
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 1e9, 0);
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result =
      simulate(profile, cluster, test::makeCandidate({2, 2}, 2, Checkpoint::Never, 2), options);
  for (const TraceEvent& event : result.trace.events) EXPECT_NE(event.phase, Phase::SkipCopy) << event.name;
  // f and b are per layer: stages of two layers take 2f and 2b; boundaries cost 10 ns.
  EXPECT_EQ(result.prediction.iterationNs, 2 * (2 * kF + 2 * kB) + (2 * kF + 2 * kB + 2 * 10));
}

// Not training: forward only, (M + K - 1) f, and everything is released by the end.
TEST(Simulate, ForwardOnlyStep) {
  const Profile profile = test::uniformProfile(3, {kF, kB, 100, 10, 5, 8});
  SimulationOptions options;
  options.training = false;
  options.recordTrace = true;
  const SimulationResult result =
      simulate(profile, test::freeCluster(3), test::makeCandidate({1, 1, 1}, 4, Checkpoint::Always, 4), options);
  EXPECT_EQ(result.prediction.iterationNs, (4 + 3 - 1) * kF);
  EXPECT_EQ(result.prediction.busyNs, (std::vector<TimeNs>{4 * kF, 4 * kF, 4 * kF}));
  std::map<std::string, double> last;
  for (const TraceEvent& e : result.trace.events) {
    EXPECT_NE(e.phase, Phase::Backward);
    EXPECT_NE(e.phase, Phase::Recompute);
    if (e.kind == EventKind::Counter) last[e.device] = e.value;
  }
  for (const auto& [device, value] : last) EXPECT_EQ(value, 16.0) << device;
}

TEST(Simulate, RejectsMalformedCandidates) {
  const Profile profile = test::uniformProfile(4, {kF, kB, 0, 0, 0, 0});
  const Cluster cluster = test::freeCluster(2);
  try {
    simulate(profile, cluster, test::makeCandidate({2, 3}, 1, Checkpoint::Never, 1));
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("balance 2,3 sums to 5 layers but the profile has 4"), std::string::npos)
        << error.what();
  }
  Candidate candidate = test::makeCandidate({2, 2}, 1, Checkpoint::Never, 1);
  candidate.devices = {0, 5};
  try {
    simulate(profile, cluster, candidate);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("stage 1 is placed on device 5 but the cluster has 2 devices"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(simulate(profile, test::freeCluster(3), test::makeCandidate({1, 1, 1, 1}, 1, Checkpoint::Never, 1)),
               std::invalid_argument);  // stage 3 on device 3 of 3
  EXPECT_THROW(simulate(profile, cluster, test::makeCandidate({4, 0}, 1, Checkpoint::Never, 1)), std::invalid_argument);
  Profile badSkip = profile;
  badSkip.skips.push_back({"far", 1, 9, 4});
  EXPECT_THROW(simulate(badSkip, cluster, test::makeCandidate({2, 2}, 1, Checkpoint::Never, 1)), std::invalid_argument);
  EXPECT_THROW(simulate(profile, cluster, test::makeCandidate({2, 2}, 0, Checkpoint::Never, 1)), std::invalid_argument);
  EXPECT_THROW(simulate(profile, cluster, test::makeCandidate({2, 2}, 1, Checkpoint::Never, 0)), std::invalid_argument);
}

std::string describe(const SimulationResult& result) {
  std::ostringstream out;
  const Prediction& p = result.prediction;
  out << p.iterationNs << " " << p.samplesPerS << " " << p.bubbleFraction << " " << p.fits << "\n";
  for (std::size_t j = 0; j < p.busyNs.size(); ++j)
    out << p.busyNs[j] << " " << p.peakBytes[j] << " " << p.peakOp[j] << "\n";
  for (const TraceEvent& e : result.trace.events) {
    out << static_cast<int>(e.kind) << "|" << e.name << "|" << e.device << "|" << e.lane << "|" << e.startNs << "|"
        << e.durationNs << "|" << e.microBatch << "|" << e.partition << "|" << static_cast<int>(e.phase) << "|"
        << e.bytes << "|" << e.value << "\n";
  }
  for (const auto& [key, value] : result.trace.metadata) out << key << "=" << value << "\n";
  return out.str();
}

TEST(Simulate, IsDeterministic) {
  Profile profile = test::makeProfile(
      {{13, 29, 100, 40, 8, 64}, {17, 31, 120, 30, 9, 32}, {11, 23, 90, 20, 7, 16}, {19, 37, 80, 10, 6, 8}});
  profile.skips.push_back({"s", 0, 3, 12});
  Cluster cluster = Cluster::uniform(3, std::nullopt, 2e9, 3);
  Candidate candidate = test::makeCandidate({1, 2, 1}, 4, Checkpoint::ExceptLast, 10);
  SimulationOptions options;
  options.recordTrace = true;
  const std::string first = describe(simulate(profile, cluster, candidate, options));
  const std::string second = describe(simulate(profile, cluster, candidate, options));
  EXPECT_EQ(first, second);
  EXPECT_GT(first.size(), 1000u);
}

TEST(Simulate, TraceHasEveryOpOnItsLaneAndMemoryCounters) {
  const Profile profile = test::uniformProfile(2, {kF, kB, 100, 10, 5, 8});
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 3, "dev");
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result =
      simulate(profile, cluster, test::makeCandidate({1, 1}, 2, Checkpoint::ExceptLast, 2), options);
  EXPECT_EQ(result.trace.metadata.at("source"), "predicted");
  EXPECT_EQ(result.trace.metadata.count("candidate"), 1u);
  int spans = 0;
  int counters = 0;
  bool sawRecompute = false;
  bool sawGradCopy = false;
  for (const TraceEvent& e : result.trace.events) {
    if (e.kind == EventKind::Counter) {
      ++counters;
      EXPECT_EQ(e.name, "memory");
      continue;
    }
    ++spans;
    if (e.name == "recompute(0,1)") {
      sawRecompute = true;
      EXPECT_EQ(e.device, "dev:1");
      EXPECT_EQ(e.lane, "partition 1");
      EXPECT_EQ(e.phase, Phase::Recompute);
      EXPECT_EQ(e.microBatch, 0);
      EXPECT_EQ(e.partition, 1);
      EXPECT_EQ(e.durationNs, kF);
    }
    if (e.name == "grad-copy(1,1->0)") {
      sawGradCopy = true;
      EXPECT_EQ(e.device, "dev:1");
      EXPECT_EQ(e.lane, "copy 1->0");
      EXPECT_EQ(e.durationNs, 3);
    }
  }
  // 2 x (2 forward + 2 backward) + 2 losses + 2 recompute (micro-batch 0) + 2 copies + 2 grad
  // copies.
  EXPECT_EQ(spans, 16);
  EXPECT_EQ(result.eventCount, 16);
  EXPECT_GT(counters, 4);
  EXPECT_TRUE(sawRecompute);
  EXPECT_TRUE(sawGradCopy);
}

}  // namespace
}  // namespace pipeprof::test_simulator
