// Tests for the link benchmark: the fit of latency and bandwidth, and the ping-pong over a transport.
#include <pipeprof/runtime/in_process_transport.h>
#include <pipeprof/runtime/link_benchmark.h>

#include <gtest/gtest.h>

#include <thread>

namespace pipeprof {
namespace {

TEST(FitLink, RecoversLatencyAndBandwidthOfExactSamples) {
  // 10 us + bytes / (2 GB/s): 1 MiB takes 524288 ns more than the latency.
  std::vector<LinkSample> samples;
  for (Bytes bytes : defaultLinkSizes()) samples.push_back({bytes, 10000 + bytes / 2});
  const Link link = fitLink(samples);
  EXPECT_NEAR(link.bandwidthBytesPerS, 2e9, 1.0);
  EXPECT_EQ(link.latencyNs, 10000);
}

TEST(FitLink, UsesTheLargeSamplesForTheSlopeAndNeverANegativeLatency) {
  // Small messages slower than the line (a fixed cost the large ones hide): the slope comes
  // from 1 MiB and up, the latency from the smallest sample minus its bytes at that rate.
  const std::vector<LinkSample> samples{{4096, 50000}, {1 << 20, 1048576}, {4 << 20, 4194304}};
  const Link link = fitLink(samples);
  EXPECT_NEAR(link.bandwidthBytesPerS, 1e9, 1.0);
  EXPECT_EQ(link.latencyNs, 50000 - 4096);
  EXPECT_EQ(fitLink({{4096, 100}, {1 << 20, 1048576}, {4 << 20, 4194304}}).latencyNs, 0);
  EXPECT_THROW(fitLink({{4096, 100}, {8192, 100}}), std::invalid_argument);
}

TEST(MeasureLink, RankZeroGetsOneSamplePerSize) {
  InProcessWorld world(3, std::chrono::seconds(30));
  std::vector<LinkMeasurement> results(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      auto transport = world.transport(r);
      results[static_cast<std::size_t>(r)] = measureLink(*transport, {4096, 1 << 20}, 2);
    });
  }
  for (auto& rank : ranks) rank.join();
  ASSERT_EQ(results[0].samples.size(), 2u);
  EXPECT_EQ(results[0].samples[0].bytes, 4096);
  EXPECT_EQ(results[0].samples[1].bytes, 1 << 20);
  EXPECT_TRUE(results[1].samples.empty());
  EXPECT_TRUE(results[2].samples.empty()) << "rank 2 only waits at the barrier";
  // 2 sizes x 3 round trips (one untimed) x 2 directions.
  EXPECT_EQ(world.messages().size(), 12u);
}

TEST(MeasureLink, RefusesWhatCannotBeMeasured) {
  InProcessWorld world(1, std::chrono::seconds(1));
  auto transport = world.transport(0);
  EXPECT_THROW(measureLink(*transport, defaultLinkSizes(), 1), std::invalid_argument);
  EXPECT_EQ(defaultLinkSizes().front(), 4096);
  EXPECT_EQ(defaultLinkSizes().back(), 64 << 20);
  EXPECT_EQ(defaultLinkSizes().size(), 8u);
}

}  // namespace
}  // namespace pipeprof
