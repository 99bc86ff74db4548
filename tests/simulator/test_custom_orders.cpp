// Tests for simulate() of custom orders: PyTorch 2.6's own orders predicted, each exactly as
// pipeprof's generator of the same schedule predicts it, and a device's work whatever the order.
#include <pipeprof/core/custom_order.h>
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace pipeprof {
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
  const std::string dir = std::string(PIPEPROF_SOURCE_DIR) + "/tests/fixtures/pytorch-2.6-schedules/";
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

}  // namespace
}  // namespace pipeprof
