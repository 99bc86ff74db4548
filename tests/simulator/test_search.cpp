// Tests for search(): exhaustive optimum, fit filtering with reasons, enumeration, order, cancel, errors, schedules.
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include "support/fixtures.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
  space.devices = 3;
  space.schedules = {ScheduleKind::GPipe};
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
  space.devices = 3;
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
  std::int64_t memoryRejections = 0;
  for (const RankedCandidate& rejected : result.rejected) {
    EXPECT_FALSE(rejected.prediction.fits);
    if (rejected.candidate.schedule == ScheduleKind::Interleaved) {
      // 6 stages on 3 devices need micro-batches in multiples of 3: 1, 2 and 8 are not.
      EXPECT_EQ(rejected.rejection.rfind("interleaved needs chunks a multiple of devices", 0), 0u)
          << rejected.rejection;
      continue;
    }
    ++memoryRejections;
    ASSERT_FALSE(rejected.prediction.overflowDevices.empty());
    const std::int64_t device = rejected.prediction.overflowDevices.front();
    const Bytes peak = rejected.prediction.peakBytes[static_cast<std::size_t>(device)];
    EXPECT_EQ(rejected.rejection.rfind(
                  "predicted peak " + formatBytes(peak) + " > 3.00 KiB on device " + std::to_string(device), 0),
              0u)
        << rejected.rejection;
  }
  EXPECT_GT(memoryRejections, 0);
}

TEST(Search, TiesBreakByChunksThenModeThenBalance) {
  // Zero-cost compute: every candidate has the same (zero) throughput.
  const Profile profile = test::uniformProfile(3, {0, 0, 1, 1, 0, 0});
  SearchSpace space;
  space.batch = 4;
  space.devices = 2;
  space.schedules = {ScheduleKind::GPipe};
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
  space.devices = 3;
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
  space.devices = 2;
  space.chunks = {4};  // only 2 micro-batches exist: legal
  space.schedules = {ScheduleKind::GPipe};
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
  space.devices = 2;
  space.schedules = {ScheduleKind::GPipe};
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
  space.devices = 4;
  // 4 pipeline devices, 3 cluster devices
  EXPECT_THROW(search(profile, test::freeCluster(3), space), std::invalid_argument);
  space.devices = 7;
  // more pipeline devices than layers
  EXPECT_THROW(search(profile, test::freeCluster(8), space), std::invalid_argument);
  space.devices = 2;
  space.chunks = {};
  EXPECT_THROW(search(profile, test::freeCluster(2), space), std::invalid_argument);
  space.chunks = {0};
  EXPECT_THROW(search(profile, test::freeCluster(2), space), std::invalid_argument);
  space.chunks = {1};
  Profile badSkip = profile;
  badSkip.skips.push_back({"far", 4, 2, 4});
  EXPECT_THROW(search(badSkip, test::freeCluster(2), space), std::invalid_argument);
  space.schedules = {};
  EXPECT_THROW(search(profile, test::freeCluster(2), space), std::invalid_argument);
  space.schedules = {ScheduleKind::Interleaved};
  space.stagesPerDevice = {2, 0};
  try {
    search(profile, test::freeCluster(2), space);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "search: stages per device must be positive, got 0 (stages per device: 2,0)");
  }
}

// Eight equal layers on two devices, every schedule: each family is simulated and ranked.
TEST(Search, TriesEverySchedule) {
  const Profile profile = test::uniformProfile(8, {10, 20, 100, 10, 0, 0});
  SearchSpace space;
  space.batch = 8;
  space.devices = 2;
  space.chunks = {2, 4, 8};
  space.stagesPerDevice = {1, 2, 4};
  space.enumeration = BalanceEnumeration::All;
  const SearchResult result = search(profile, test::freeCluster(2), space);
  // gpipe and 1f1b over C(7,1) = 7 balances, interleaved v2 over C(7,3) = 35, v4 over 1.
  EXPECT_EQ(result.evaluated, (7 + 7 + 35 + 1) * 3 * 3);
  EXPECT_TRUE(result.rejected.empty());
  EXPECT_EQ(static_cast<std::int64_t>(result.ranked.size()), result.evaluated);
  std::map<std::pair<ScheduleKind, std::int64_t>, std::int64_t> seen;
  for (const RankedCandidate& ranked : result.ranked) {
    ++seen[{ranked.candidate.schedule, ranked.candidate.stagesPerDevice}];
    EXPECT_EQ(static_cast<std::int64_t>(ranked.candidate.balance.size()), 2 * ranked.candidate.stagesPerDevice);
    EXPECT_EQ(ranked.prediction.peakBytes.size(), 2u);  // per pipeline device
  }
  EXPECT_EQ(seen[std::make_pair(ScheduleKind::GPipe, std::int64_t{1})], 7 * 9);
  EXPECT_EQ(seen[std::make_pair(ScheduleKind::OneFOneB, std::int64_t{1})], 7 * 9);
  EXPECT_EQ(seen[std::make_pair(ScheduleKind::Interleaved, std::int64_t{2})], 35 * 9);
  EXPECT_EQ(seen[std::make_pair(ScheduleKind::Interleaved, std::int64_t{4})], 1 * 9);
  // The best is interleaved with the most stages per device (its bubble is the smallest).
  EXPECT_EQ(result.ranked.front().candidate.schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(result.ranked.front().candidate.stagesPerDevice, 4);
  EXPECT_EQ(result.ranked.front().candidate.chunks, 8);
}

// Interleaved needs micro-batches in multiples of the devices; what counts is the number that
// exist (8 chunks of a batch of 6 are 6 micro-batches).
TEST(Search, RejectsInterleavedShapesUnsimulated) {
  const Profile profile = test::uniformProfile(8, {10, 20, 0, 0, 0, 0});
  SearchSpace space;
  space.batch = 6;
  space.devices = 4;
  space.chunks = {8};
  space.modes = {Checkpoint::Never};
  space.enumeration = BalanceEnumeration::Given;
  space.balances = {{2, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1}};
  const SearchResult result = search(profile, test::freeCluster(4), space);
  EXPECT_EQ(result.evaluated, 3);
  ASSERT_EQ(result.ranked.size(), 2u);  // gpipe and 1f1b
  ASSERT_EQ(result.rejected.size(), 1u);
  const RankedCandidate& rejected = result.rejected.front();
  EXPECT_EQ(rejected.candidate.schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(rejected.candidate.stagesPerDevice, 2);
  EXPECT_EQ(rejected.candidate.balance, (std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(rejected.rejection,
            "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)");
  EXPECT_FALSE(rejected.prediction.fits);
  EXPECT_TRUE(rejected.prediction.peakBytes.empty());  // not simulated
  // A given balance with a stage count no v of the space has.
  space.balances = {{2, 2, 2, 2}, {1, 1, 1, 1, 1, 3}};
  EXPECT_THROW(search(profile, test::freeCluster(4), space), std::invalid_argument);
}

TEST(Search, RejectsMoreStagesThanLayers) {
  const Profile profile = sixLayers();
  SearchSpace space;
  space.batch = 8;
  space.devices = 4;
  space.chunks = {4, 8};
  const SearchResult result = search(profile, test::freeCluster(4), space);
  ASSERT_EQ(result.rejected.size(), 1u);
  EXPECT_EQ(result.rejected.front().rejection,
            "interleaved with 2 stages per device needs 8 stages (4 devices x 2) but the model has 6 layers");
  EXPECT_TRUE(result.rejected.front().candidate.balance.empty());
  // gpipe and 1f1b over C(5,3) = 10 balances x 2 chunks x 3 modes, and the rejection.
  EXPECT_EQ(result.evaluated, 2 * 10 * 2 * 3 + 1);
  EXPECT_EQ(static_cast<std::int64_t>(result.ranked.size() + result.rejected.size()), result.evaluated);
}

// Saved activations dominate: GPipe keeps all 8 micro-batches on device 0 (8 x 1000 bytes),
// 1F1B at most p = 2 of them; a 4000-byte cap rejects GPipe and ranks 1F1B.
TEST(Search, OneFOneBFitsWhereGPipeDoesNot) {
  const Profile profile = test::uniformProfile(2, {10, 20, 1000, 0, 0, 0});
  SearchSpace space;
  space.batch = 8;
  space.devices = 2;
  space.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
  space.chunks = {8};
  space.modes = {Checkpoint::Never};
  const SearchResult result = search(profile, test::freeCluster(2, Bytes{4000}), space);
  ASSERT_EQ(result.ranked.size(), 1u);
  EXPECT_EQ(result.ranked.front().candidate.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(result.ranked.front().prediction.peakBytes, (std::vector<Bytes>{2000, 1000}));
  ASSERT_EQ(result.rejected.size(), 1u);
  EXPECT_EQ(result.rejected.front().candidate.schedule, ScheduleKind::GPipe);
  EXPECT_EQ(result.rejected.front().rejection, "predicted peak " + formatBytes(8000) + " > " + formatBytes(4000) +
                                                   " on device 0; predicted peak " + formatBytes(8000) + " > " +
                                                   formatBytes(4000) + " on device 1");
  // Without the cap they tie on time; gpipe comes first.
  const SearchResult free = search(profile, test::freeCluster(2), space);
  ASSERT_EQ(free.ranked.size(), 2u);
  EXPECT_EQ(free.ranked[0].prediction.samplesPerS, free.ranked[1].prediction.samplesPerS);
  EXPECT_EQ(free.ranked[0].candidate.schedule, ScheduleKind::GPipe);
}

TEST(Search, TiesBreakByScheduleThenStagesPerDeviceBeforeBalance) {
  const Profile profile = test::uniformProfile(4, {0, 0, 1, 1, 0, 0});
  SearchSpace space;
  space.batch = 2;
  space.devices = 2;
  space.schedules = {ScheduleKind::Interleaved, ScheduleKind::OneFOneB, ScheduleKind::GPipe};
  space.chunks = {2};
  space.modes = {Checkpoint::Never};
  space.enumeration = BalanceEnumeration::Given;
  space.balances = {{3, 1}, {1, 1, 1, 1}, {2, 2}};
  const SearchResult result = search(profile, test::freeCluster(2), space);
  std::vector<std::tuple<ScheduleKind, std::int64_t, std::vector<std::int64_t>>> order;
  for (const RankedCandidate& ranked : result.ranked) {
    order.emplace_back(ranked.candidate.schedule, ranked.candidate.stagesPerDevice, ranked.candidate.balance);
  }
  const std::vector<std::tuple<ScheduleKind, std::int64_t, std::vector<std::int64_t>>> expected{
      {ScheduleKind::GPipe, 1, {2, 2}},
      {ScheduleKind::GPipe, 1, {3, 1}},
      {ScheduleKind::OneFOneB, 1, {2, 2}},
      {ScheduleKind::OneFOneB, 1, {3, 1}},
      {ScheduleKind::Interleaved, 2, {1, 1, 1, 1}}};
  EXPECT_EQ(order, expected);
}

TEST(StageCounts, OnePerScheduleFamilyAndV) {
  SearchSpace space;
  space.schedules = {ScheduleKind::GPipe, ScheduleKind::Interleaved};
  space.stagesPerDevice = {1, 3, 2};
  EXPECT_EQ(stageCounts(space, 2), (std::vector<std::int64_t>{2, 4, 6}));
  space.schedules = {ScheduleKind::Interleaved};
  space.stagesPerDevice = {1};
  EXPECT_TRUE(stageCounts(space, 2).empty());
}

TEST(DevicesOfGivenBalances, TheShortestBalanceOverTheFewestStagesPerDevice) {
  SearchSpace space;
  space.schedules = {ScheduleKind::GPipe};
  EXPECT_EQ(devicesOfGivenBalances(space), 0);  // auto: the balances imply nothing
  space.enumeration = BalanceEnumeration::Given;
  space.balances = {{1, 2, 3}, {2, 2}};
  EXPECT_EQ(devicesOfGivenBalances(space), 2);
  space.schedules = {ScheduleKind::Interleaved};
  space.stagesPerDevice = {3, 2};
  space.balances = {{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1}};
  EXPECT_EQ(devicesOfGivenBalances(space), 2);  // 4 stages at v = 2
  space.balances = {{3}};
  EXPECT_EQ(devicesOfGivenBalances(space), 1);  // never less than one device
}

TEST(ClusterPeakBytes, AddsThePeaksOfThePipelineDevicesOnEachClusterDevice) {
  Candidate candidate;
  candidate.balance = {1, 1, 1, 1};
  Prediction prediction;
  prediction.peakBytes = {100, 20, 3};
  EXPECT_EQ(clusterPeakBytes(candidate, prediction, 3), (std::vector<Bytes>{100, 20, 3}));
  EXPECT_EQ(clusterPeakBytes(candidate, prediction, 5), (std::vector<Bytes>{100, 20, 3, 0, 0}));
  // Placed two by two on two cluster devices.
  candidate.devices = {1, 0, 1, 0};
  prediction.peakBytes = {100, 20, 3, 4};
  EXPECT_EQ(clusterPeakBytes(candidate, prediction, 2), (std::vector<Bytes>{24, 103}));
}

TEST(GroupRejections, ByOverflowingDevicesOrShapeReasonLargestFirst) {
  std::vector<RankedCandidate> rejected(4);
  rejected[0].prediction.overflowDevices = {1};
  rejected[1].rejection = "interleaved needs chunks a multiple of 2";
  rejected[2].prediction.overflowDevices = {1};
  rejected[3].prediction.overflowDevices = {0, 1};
  const std::vector<RejectionGroup> groups = groupRejections(rejected);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].reason, "predicted not to fit on device 1");
  EXPECT_EQ(groups[0].count, 2);
  EXPECT_EQ(groups[0].example, &rejected[0]);
  EXPECT_EQ(groups[1].reason, "not schedulable: interleaved needs chunks a multiple of 2");
  EXPECT_EQ(groups[2].reason, "predicted not to fit on devices 0,1");
  EXPECT_EQ(groups[2].count, 1);
}

// A search compiles each schedule shape once and reuses it for every balance with the same
// shape: the stages holding each skip's stash and pop, and whether each opens its
// stage (a W that keeps the skip's gradient, a stash of the stage's input). Threads and
// one process per device, whose compiled holds differ.
TEST(Search, EveryBalancePredictsWhatItPredictsAlone) {
  const Profile resnet = readProfile(test::fixturePath("resnet-batch32-profile.json"));
  const Cluster cluster = test::freeCluster(2);
  SearchSpace space;
  space.batch = 32;
  space.devices = 2;
  space.schedules = {ScheduleKind::InterleavedZeroBubble, ScheduleKind::ZeroBubbleV};
  space.stagesPerDevice = {2};
  space.chunks = {4};
  space.modes = {Checkpoint::Never, Checkpoint::Always};
  space.enumeration = BalanceEnumeration::Given;
  space.balances = {{12, 12, 11, 11}, {11, 13, 11, 11}, {13, 9, 12, 12}, {13, 10, 11, 12}};
  Cluster ranks = Cluster::uniform(2, std::nullopt, 4.8e9, 40000, "cpu");
  ranks.processPerDevice = true;
  for (const Cluster& layout : {cluster, ranks}) {
    const SearchResult result = search(resnet, layout, space);
    ASSERT_EQ(result.ranked.size(), 16u);
    for (const RankedCandidate& ranked : result.ranked) {
      EXPECT_EQ(ranked.prediction.peakBytes, simulate(resnet, layout, ranked.candidate).prediction.peakBytes)
          << scheduleKindName(ranked.candidate.schedule) << " " << checkpointName(ranked.candidate.checkpoint) << " "
          << ranked.candidate.balance[0] << "," << ranked.candidate.balance[1];
    }
  }
}

}  // namespace
}  // namespace pipeprof
