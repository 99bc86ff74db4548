// Tests of the optimizer step of CPU devices sharing a host's memory (docs/simulator.md, "The
// optimizer step"): Profile::optimizerAtOnce lengthens each device's step by how many step at once.
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

namespace pipeprof::test_optimizer_at_once {
namespace {

constexpr TimeNs kLayerStepNs = 1000;

/// Four layers (forward 10, backward 20 per sample, 1000 parameter bytes), each stepping its
/// parameters in 1000 ns alone; with `slowdown`, two devices stepping SGD at once measured it.
Profile fourLayers(std::optional<double> slowdown) {
  Profile profile = test::uniformProfile(4, test::LayerCosts{10, 20, 0, 0, 0, 1000});
  for (LayerProfile& layer : profile.layers) layer.optimizerStepNs = kLayerStepNs;
  if (slowdown) profile.optimizerAtOnce = OptimizerAtOnce{2, {{OptimizerKind::Sgd, *slowdown}}};
  return profile;
}

TimeNs stepNs(const Profile& profile, std::vector<std::int64_t> balance, const Cluster& cluster) {
  return simulate(profile, cluster, test::makeCandidate(std::move(balance), 2, Checkpoint::Never, 2))
      .prediction.iterationNs;
}

TEST(OptimizerAtOnce, TwoDevicesOfOneHostStepTheirLayersTheMeasuredSlowdownLonger) {
  const Cluster cluster = test::freeCluster(2);
  const TimeNs alone = stepNs(fourLayers(std::nullopt), {2, 2}, cluster);
  // Each device steps two layers: 2000 ns alone, 3000 at once.
  EXPECT_EQ(stepNs(fourLayers(1.5), {2, 2}, cluster), alone + 1000);
  // The longest device's step is what the step waits for: three layers, 4500 ns.
  EXPECT_EQ(stepNs(fourLayers(1.5), {3, 1}, cluster), stepNs(fourLayers(std::nullopt), {3, 1}, cluster) + 1500);
}

TEST(OptimizerAtOnce, MoreDevicesThanMeasuredSlowEachOtherLinearly) {
  // Four at once, measured with two: 1 + 0.5 x 3 = 2.5 times a layer's 1000 ns.
  const Cluster cluster = test::freeCluster(4);
  EXPECT_EQ(stepNs(fourLayers(1.5), {1, 1, 1, 1}, cluster),
            stepNs(fourLayers(std::nullopt), {1, 1, 1, 1}, cluster) + 1500);
}

TEST(OptimizerAtOnce, DevicesOfOtherHostsAnotherOptimizerOrNoneAtOnceStepAsAlone) {
  const Cluster twoHosts = Cluster::withHosts({"a", "b"}, std::nullopt, Link{}, Link{}, "cpu");
  EXPECT_EQ(stepNs(fourLayers(1.5), {2, 2}, twoHosts), stepNs(fourLayers(std::nullopt), {2, 2}, twoHosts));
  Profile adamw = fourLayers(1.5);
  adamw.environment.optimizer.kind = OptimizerKind::AdamW;  // measured for SGD only
  EXPECT_EQ(stepNs(adamw, {2, 2}, test::freeCluster(2)),
            stepNs(fourLayers(std::nullopt), {2, 2}, test::freeCluster(2)));
  EXPECT_EQ(stepNs(fourLayers(1.5), {4}, test::freeCluster(1)),
            stepNs(fourLayers(std::nullopt), {4}, test::freeCluster(1)))
      << "one device steps alone";
  EXPECT_EQ(stepNs(fourLayers(0.9), {2, 2}, test::freeCluster(2)),
            stepNs(fourLayers(std::nullopt), {2, 2}, test::freeCluster(2)))
      << "a slowdown under 1 is noise: no faster than alone";
}

}  // namespace
}  // namespace pipeprof::test_optimizer_at_once
