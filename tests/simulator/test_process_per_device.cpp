// Tests for one process per device (Cluster::processPerDevice): what a rank keeps of what it
// sent, when its receive buffers are posted, and that no rank frees another's tensors.
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pipeprof::test_process_per_device {
namespace {

constexpr Bytes kO = 10;  // each layer's output per sample
// Two one-layer stages, f 10, b 20, no workspace; one saves nothing, one saves its output (the
// output is then among its saved bytes, which B frees).
const test::LayerCosts kSavesNothing{10, 20, 0, kO, 0, 0};
const test::LayerCosts kSavesOutput{10, 20, kO, kO, 0, 0};

Cluster twoRanks() {
  Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 3, "cpu");
  cluster.processPerDevice = true;
  return cluster;
}

SimulationResult gpipe(const test::LayerCosts& layer, const Cluster& cluster) {
  SimulationOptions options;
  options.recordTrace = true;
  return simulate(test::makeProfile({layer, layer}), cluster, test::makeCandidate({1, 1}, 4, Checkpoint::Never, 4),
                  options);
}

// GPipe, 4 micro-batches of one sample. Rank 0 sends each output to rank 1 and keeps it until its
// last op, backward(0,0), ends: after its forwards it holds 4 O whatever B frees. Its order is
// F0 F1 F2 F3 B3 B2 B1 B0; each op posts the gradient receive of the op two ahead (F0 those of
// the first three), so B3 and B2's buffers exist from F2 and F3, and at B3's start, posting B1's,
// three buffers: 7 O. As threads (the same link) outputs are freed by their backward and a
// buffer exists from its copy's start: 6 O at most.
TEST(ProcessPerDevice, ARankKeepsWhatItSentAndPostsItsReceivesTwoOpsAhead) {
  for (const test::LayerCosts& layer : {kSavesNothing, kSavesOutput}) {
    const Prediction ranks = gpipe(layer, twoRanks()).prediction;
    EXPECT_EQ(ranks.peakBytes[0], 7 * kO);
    EXPECT_EQ(ranks.peakOp[0], "backward(3,0)");
    Cluster threads = twoRanks();
    threads.processPerDevice = false;
    EXPECT_EQ(gpipe(layer, threads).prediction.peakBytes[0], 6 * kO);
  }
}

// The sends' tensors are freed when their rank's ops end: every device's counter ends at 0.
TEST(ProcessPerDevice, EverythingARankSentIsFreedWhenItsOpsEnd) {
  for (const test::LayerCosts& layer : {kSavesNothing, kSavesOutput}) {
    const SimulationResult result = gpipe(layer, twoRanks());
    std::map<std::string, double> last;
    for (const TraceEvent& e : result.trace.events) {
      if (e.kind == EventKind::Counter) last[e.device] = e.value;
    }
    ASSERT_EQ(last.size(), 2u);
    for (const auto& [device, value] : last) EXPECT_EQ(value, 0.0) << device;
  }
}

// Ranks share no tensor even over a zero-cost link: the receive buffers count, where threads
// joined by one share the sender's tensors and copy nothing.
TEST(ProcessPerDevice, RanksShareNoTensorOverAZeroCostLink) {
  Cluster ranks = test::freeCluster(2);
  ranks.processPerDevice = true;
  EXPECT_EQ(gpipe(kSavesNothing, ranks).prediction.peakBytes[0], 7 * kO);
  EXPECT_EQ(gpipe(kSavesNothing, test::freeCluster(2)).prediction.peakBytes[0], 4 * kO);
}

}  // namespace
}  // namespace pipeprof::test_process_per_device
