// Tests of shared parameters in the simulator: one copy per device, the gradient exchange before
// the optimizer, its trace spans (docs/simulator.md, "Shared parameters").
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace pipeprof::test_shared_parameters {
namespace {

using test::LayerCosts;

constexpr Bytes kShared = 1000;  // the tied parameter, held by layers 0 and 2
constexpr BytesPerS kBandwidth = 1e9;
constexpr TimeNs kLatency = 500;

/// Three layers of 1000 parameter bytes each (forward 10, backward 20 per sample, no
/// activations); with `tied`, layers 0 and 2 hold the same 1000 bytes.
Profile threeLayers(bool tied, OptimizerKind optimizer = OptimizerKind::Sgd) {
  Profile profile = test::uniformProfile(3, LayerCosts{10, 20, 0, 0, 0, kShared});
  profile.environment.optimizer.kind = optimizer;
  for (LayerProfile& layer : profile.layers) {
    layer.optimizerBytes = optimizerStateCopies(optimizer) * layer.gradBytes;
  }
  if (tied) profile.sharedParameters.push_back({"layer0.weight", {0, 2}, kShared});
  return profile;
}

SimulationResult run(const Profile& profile, std::vector<std::int64_t> balance, bool trace = false) {
  SimulationOptions options;
  options.recordTrace = trace;
  const Cluster cluster =
      Cluster::uniform(static_cast<std::int64_t>(balance.size()), std::nullopt, kBandwidth, kLatency, "dev");
  return simulate(profile, cluster, test::makeCandidate(std::move(balance), 2, Checkpoint::Never, 2), options);
}

TEST(SharedParameters, CopiesOnTwoDevicesExchangeTheirGradientsBeforeTheOptimizer) {
  const Prediction untied = run(threeLayers(false), {1, 1, 1}).prediction;
  const Prediction tied = run(threeLayers(true), {1, 1, 1}).prediction;
  // Devices 0 and 2 hold a copy each: latency + bytes / bandwidth, once, after the last op.
  EXPECT_EQ(tied.iterationNs, untied.iterationNs + kLatency + kShared);  // 1000 bytes at 1 GB/s: 1000 ns
  // Each device holds its own copy: nothing counted twice.
  EXPECT_EQ(tied.peakBytes, untied.peakBytes);
}

TEST(SharedParameters, LayersOfOneDeviceHoldOneCopyOfTheParameterItsGradientAndState) {
  for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::AdamW}) {
    SCOPED_TRACE(std::string(optimizerName(kind)));
    const Prediction untied = run(threeLayers(false, kind), {3}).prediction;
    const Prediction tied = run(threeLayers(true, kind), {3}).prediction;
    EXPECT_EQ(tied.iterationNs, untied.iterationNs) << "one device: nothing to exchange";
    const Bytes copy = kShared * (2 + optimizerStateCopies(kind));
    ASSERT_EQ(tied.peakBytes.size(), 1u);
    EXPECT_EQ(tied.peakBytes[0], untied.peakBytes[0] - copy);
    const Candidate candidate = test::makeCandidate({3}, 2, Checkpoint::Never, 2);
    EXPECT_EQ(modelStateBytes(threeLayers(true, kind), candidate)[0],
              modelStateBytes(threeLayers(false, kind), candidate)[0] - copy);
  }
}

TEST(SharedParameters, TheTraceShowsTheExchangeOnTheDevicesHoldingCopies) {
  const SimulationResult result = run(threeLayers(true), {1, 1, 1}, /*trace=*/true);
  std::vector<std::string> devices;
  TimeNs endNs = 0;
  for (const TraceEvent& event : result.trace.events) {
    if (event.kind == EventKind::Span && event.name == "shared gradients") {
      devices.push_back(event.device);
      EXPECT_EQ(event.durationNs, kLatency + kShared);
      endNs = event.startNs + event.durationNs;
    }
  }
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(devices, (std::vector<std::string>{"dev:0", "dev:2"}));
  EXPECT_EQ(endNs, result.prediction.iterationNs) << "the optimizer (free here) follows it";
}

}  // namespace
}  // namespace pipeprof::test_shared_parameters
