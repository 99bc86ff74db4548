// Tests for search(): exhaustive optimum, fit filtering with reasons, enumeration, order, cancel, errors.
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace pipeprof {
namespace {

Profile sixLayers() {
  return test::makeProfile({{30, 60, 400, 40, 16, 100},
                            {10, 25, 100, 20, 8, 300},
                            {45, 80, 600, 60, 30, 50},
                            {20, 35, 200, 20, 4, 400},
                            {15, 40, 300, 30, 12, 10},
                            {35, 70, 500, 10, 20, 200}});
}

TEST(Search, FindsTheExhaustiveOptimum) {
  const Profile profile = sixLayers();
  const Cluster cluster = Cluster::uniform(3, std::nullopt, 1e9, 5, "dev");
  SearchSpace space;
  space.batch = 8;
  space.partitions = 3;
  space.chunks = {1, 2, 4, 8};
  space.enumeration = BalanceEnumeration::All;
  const SearchResult result = search(profile, cluster, space);
  ASSERT_EQ(result.evaluated, 10 * 4 * 3);
  ASSERT_EQ(result.ranked.size(), 120u);
  EXPECT_GT(result.simulatedEvents, 0);

  double best = 0;
  Candidate bestCandidate;
  for (const auto& balance : enumerateBalances(profile, cluster, space)) {
    for (std::int64_t chunks : space.chunks) {
      for (Checkpoint mode : space.modes) {
        const Candidate candidate = test::makeCandidate(balance, chunks, mode, 8);
        const double rate = simulate(profile, cluster, candidate).prediction.samplesPerS;
        if (rate > best) {
          best = rate;
          bestCandidate = candidate;
        }
      }
    }
  }
  EXPECT_EQ(result.ranked.front().prediction.samplesPerS, best);
  EXPECT_EQ(result.ranked.front().candidate.balance, bestCandidate.balance);
  for (std::size_t k = 1; k < result.ranked.size(); ++k) {
    EXPECT_GE(result.ranked[k - 1].prediction.samplesPerS, result.ranked[k].prediction.samplesPerS);
  }
}

TEST(Search, NeverSuggestsACandidatePredictedNotToFit) {
  const Profile profile = sixLayers();
  // 3 KiB per device: only some candidates fit.
  const Cluster cluster = Cluster::uniform(3, Bytes{3 * 1024}, 1e9, 5, "dev");
  SearchSpace space;
  space.batch = 8;
  space.partitions = 3;
  space.chunks = {1, 2, 8};
  const SearchResult result = search(profile, cluster, space);
  ASSERT_FALSE(result.ranked.empty());
  ASSERT_FALSE(result.rejected.empty());
  EXPECT_EQ(static_cast<std::int64_t>(result.ranked.size() + result.rejected.size()), result.evaluated);
  for (const RankedCandidate& ranked : result.ranked) {
    EXPECT_TRUE(ranked.prediction.fits);
    EXPECT_TRUE(ranked.rejection.empty());
    for (Bytes peak : ranked.prediction.peakBytes) EXPECT_LE(peak, 3 * 1024);
  }
  for (const RankedCandidate& rejected : result.rejected) {
    EXPECT_FALSE(rejected.prediction.fits);
    ASSERT_FALSE(rejected.prediction.overflowDevices.empty());
    const std::int64_t device = rejected.prediction.overflowDevices.front();
    const Bytes peak = rejected.prediction.peakBytes[static_cast<std::size_t>(device)];
    EXPECT_EQ(rejected.rejection.rfind("predicted peak " + formatBytes(peak) + " > 3.00 KiB on device " +
                                           std::to_string(device),
                                       0),
              0u)
        << rejected.rejection;
  }
}

TEST(Search, TiesBreakByChunksThenModeThenBalance) {
  // Zero-cost compute: every candidate has the same (zero) throughput.
  const Profile profile = test::uniformProfile(3, {0, 0, 1, 1, 0, 0});
  SearchSpace space;
  space.batch = 4;
  space.partitions = 2;
  space.chunks = {2, 1};
  space.modes = {Checkpoint::Never, Checkpoint::Always};
  const SearchResult result = search(profile, test::freeCluster(2), space);
  std::vector<std::tuple<std::int64_t, Checkpoint, std::vector<std::int64_t>>> order;
  for (const RankedCandidate& ranked : result.ranked) {
    order.emplace_back(ranked.candidate.chunks, ranked.candidate.checkpoint, ranked.candidate.balance);
  }
  const std::vector<std::tuple<std::int64_t, Checkpoint, std::vector<std::int64_t>>> expected{
      {1, Checkpoint::Always, {1, 2}}, {1, Checkpoint::Always, {2, 1}}, {1, Checkpoint::Never, {1, 2}},
      {1, Checkpoint::Never, {2, 1}},  {2, Checkpoint::Always, {1, 2}}, {2, Checkpoint::Always, {2, 1}},
      {2, Checkpoint::Never, {1, 2}},  {2, Checkpoint::Never, {2, 1}}};
  EXPECT_EQ(order, expected);
}

TEST(Search, AutoUsesMinBottleneckNeighbourhoodAndBalanceByTime) {
  std::vector<test::LayerCosts> layers;
  for (int l = 0; l < 12; ++l) layers.push_back({10 + 5 * l, 20 + 10 * l, 0, 1, 0, 0});
  const Profile profile = test::makeProfile(layers);
  SearchSpace space;
  space.batch = 4;
  space.partitions = 3;
  space.chunks = {4};
  space.maxExhaustiveBalances = 10;  // C(11, 2) = 55 > 10
  const auto balances = enumerateBalances(profile, test::freeCluster(3), space);
  const auto dp = minBottleneckBalance(layerTimesNs(profile, 1), 3);
  const auto torchgpipe = balanceByTime(layerTimesNs(profile, 4), 3);
  auto contains = [&](const std::vector<std::int64_t>& balance) {
    return std::find(balances.begin(), balances.end(), balance) != balances.end();
  };
  EXPECT_TRUE(contains(dp));
  EXPECT_TRUE(contains(torchgpipe));
  std::vector<std::int64_t> moved = dp;
  moved[0] -= 2;
  moved[1] += 2;
  EXPECT_TRUE(contains(moved));
  EXPECT_LT(balances.size(), 55u);
  EXPECT_TRUE(std::is_sorted(balances.begin(), balances.end()));
  space.maxExhaustiveBalances = 55;
  EXPECT_EQ(enumerateBalances(profile, test::freeCluster(3), space).size(), 55u);
}

TEST(Search, GivenBalancesAndChunksAboveTheBatch) {
  const Profile profile = sixLayers();
  SearchSpace space;
  space.batch = 2;
  space.partitions = 2;
  space.chunks = {4};  // only 2 micro-batches exist: legal
  space.modes = {Checkpoint::ExceptLast};
  space.enumeration = BalanceEnumeration::Given;
  space.balances = {{3, 3}, {2, 4}};
  const SearchResult result = search(profile, test::freeCluster(2), space);
  EXPECT_EQ(result.evaluated, 2);
  EXPECT_EQ(result.ranked.size(), 2u);
  space.balances = {{3, 2}};
  EXPECT_THROW(search(profile, test::freeCluster(2), space), std::invalid_argument);
  space.balances = {{2, 2, 2}};
  EXPECT_THROW(search(profile, test::freeCluster(3), space), std::invalid_argument);
}

TEST(Search, CancelsWhenProgressSaysSo) {
  const Profile profile = sixLayers();
  SearchSpace space;
  space.batch = 8;
  space.partitions = 2;
  space.chunks = {1, 2, 4, 8, 16, 32, 64, 128};
  space.enumeration = BalanceEnumeration::All;
  std::int64_t calls = 0;
  const SearchResult result = search(profile, test::freeCluster(2), space, [&](std::int64_t, std::int64_t total) {
    EXPECT_EQ(total, 5 * 8 * 3);
    return ++calls < 1;
  });
  EXPECT_TRUE(result.cancelled);
}

TEST(Search, RejectsAnInconsistentSpace) {
  const Profile profile = sixLayers();
  SearchSpace space;
  space.batch = 8;
  space.partitions = 4;
  EXPECT_THROW(search(profile, test::freeCluster(3), space), std::invalid_argument);  // 4 partitions, 3 devices
  space.partitions = 7;
  EXPECT_THROW(search(profile, test::freeCluster(8), space), std::invalid_argument);  // more partitions than layers
  space.partitions = 2;
  space.chunks = {};
  EXPECT_THROW(search(profile, test::freeCluster(2), space), std::invalid_argument);
  space.chunks = {0};
  EXPECT_THROW(search(profile, test::freeCluster(2), space), std::invalid_argument);
  space.chunks = {1};
  Profile badSkip = profile;
  badSkip.skips.push_back({"far", 4, 2, 4});
  EXPECT_THROW(search(badSkip, test::freeCluster(2), space), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
