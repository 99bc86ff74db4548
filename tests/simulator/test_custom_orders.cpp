// Tests for simulate() of custom orders: PyTorch 2.6's own orders predicted, each exactly as
// pipeprof's generator of the same schedule predicts it, and a device's work whatever the order.
#include <pipeprof/core/custom_order.h>
#include <pipeprof/simulator/simulator.h>

#include "support/fixtures.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace pipeprof::test_custom_orders {
namespace {

constexpr TimeNs kF = 10;
constexpr TimeNs kI = 12;
constexpr TimeNs kW = 8;

/// The family pipeprof generates for a fixture, if it generates it (looped BFS it does not).
std::optional<ScheduleKind> generatedKind(const std::string& family) {
  if (family == "interleaved_1f1b") return ScheduleKind::Interleaved;
  if (family == "interleaved_zero_bubble") return ScheduleKind::InterleavedZeroBubble;
  if (family == "zbv_zero_bubble") return ScheduleKind::ZeroBubbleV;
  return std::nullopt;
}

TEST(CustomOrders, PytorchsOwnOrdersArePredictedAsTheGeneratedOnes) {
  const std::string dir = test::fixturePath("pytorch-2.6-schedules/");
  test::LayerCosts costs{kF, kI + kW, 1000, 0, 0, 0};
  costs.split = BackwardSplit{kI, kW, 400};
  for (const std::string family : {"interleaved_1f1b", "looped_bfs", "interleaved_zero_bubble", "zbv_zero_bubble"}) {
    for (const char* shape : {"_p2_m4_v2.csv", "_p2_m8_v2.csv", "_p4_m8_v2.csv", "_p4_m16_v2.csv"}) {
      SCOPED_TRACE(family + shape);
      Candidate candidate;
      runCustomOrder(candidate, readCustomOrder(dir + family + shape));
      const std::int64_t n = candidate.order->stages();
      const std::int64_t m = candidate.order->microBatches;
      candidate.balance.assign(static_cast<std::size_t>(n), 1);
      candidate.batch = m;
      candidate.checkpoint = Checkpoint::Never;
      const Profile profile = test::uniformProfile(n, costs);
      const Prediction custom = simulate(profile, test::freeCluster(n / 2), candidate).prediction;
      // Each device runs 2 stages' forwards and backwards of every micro-batch.
      for (TimeNs busy : custom.busyNs) EXPECT_EQ(busy, 2 * m * (kF + kI + kW));
      EXPECT_GE(custom.iterationNs, 2 * m * (kF + kI + kW));
      if (const std::optional<ScheduleKind> kind = generatedKind(family)) {
        Candidate generated = candidate;
        generated.schedule = *kind;
        generated.order = nullptr;
        const Prediction expected = simulate(profile, test::freeCluster(n / 2), generated).prediction;
        EXPECT_EQ(custom.iterationNs, expected.iterationNs);
        EXPECT_EQ(custom.peakBytes, expected.peakBytes);
      }
    }
  }
}

// One stage per rank, two micro-batches, the first with a full backward and the second split:
// each op takes its own time, B = I + W (the profile's, here 10 + 12 and 8), and the step is
// the chain it makes. Rank 0: 0F0 0F1 [wait] 0B0 0I1 0W1; rank 1: 1F0 1B0 1F1 1I1 1W1.
TEST(CustomOrders, AnOrderMixingFullAndSplitBackwardsIsPredictedOpByOp) {
  test::LayerCosts costs{kF, kI + kW, 1000, 0, 0, 0};
  costs.split = BackwardSplit{kI, kW, 400};
  Candidate candidate;
  runCustomOrder(candidate,
                 makeCustomOrder(readScheduleCsv("0F0,0F1,0B0,0I1,0W1\n1F0,1B0,1F1,1I1,1W1\n", "m.csv"), "m.csv"));
  candidate.balance = {1, 1};
  candidate.batch = 2;
  candidate.checkpoint = Checkpoint::Never;
  const Prediction p = simulate(test::uniformProfile(2, costs), test::freeCluster(2), candidate).prediction;
  for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, 2 * (kF + kI + kW));
  // Rank 1: 1F0 at F, 1B0 to 2F + B, 1F1 (0F1 done at 2F) to 3F + B, 1I1 to 3F + B + I, 1W1.
  // Rank 0: 0B0 from 2F + B to 2F + 2B, 0I1 from 3F + B + I (its gradient) to 3F + B + 2I, 0W1.
  EXPECT_EQ(p.iterationNs, 3 * kF + (kI + kW) + 2 * kI + kW);
}

// Stages 1 and 2 on rank 1, stage 0 on rank 0, full backwards of B = I + W: rank 1 runs 1F0
// [F, 2F], 2F0, 1F1, 2F1 to 5F, then 2B0, 1B0, 2B1, 1B1 to 5F + 4B; rank 0's 0B1 waits for
// 1B1 and ends at 5F + 5B. Rank 1 is busy with twice rank 0's work.
TEST(CustomOrders, RanksHoldingDifferentNumbersOfStagesArePredictedOpByOp) {
  test::LayerCosts costs{kF, kI + kW, 1000, 0, 0, 0};
  Candidate candidate;
  runCustomOrder(
      candidate,
      makeCustomOrder(readScheduleCsv("0F0,0F1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n", "u.csv"), "u.csv"));
  candidate.balance = {1, 1, 1};
  candidate.batch = 2;
  candidate.checkpoint = Checkpoint::Never;
  const Prediction p = simulate(test::uniformProfile(3, costs), test::freeCluster(2), candidate).prediction;
  ASSERT_EQ(p.busyNs.size(), 2u);
  EXPECT_EQ(p.busyNs[0], 2 * (kF + kI + kW));
  EXPECT_EQ(p.busyNs[1], 4 * (kF + kI + kW));
  EXPECT_EQ(p.iterationNs, 5 * kF + 5 * (kI + kW));
  // Rank 1 holds two stages' parameters, rank 0 one.
  EXPECT_GT(p.peakBytes[1], p.peakBytes[0]);
}

}  // namespace
}  // namespace pipeprof::test_custom_orders
