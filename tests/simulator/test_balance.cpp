// Tests for balance enumeration, the min-bottleneck balance and torchgpipe's balance_by_time.
#include "balance.h"

#include <pipeprof/simulator/search.h>

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <vector>

namespace pipeprof {
namespace {

using Balances = std::vector<std::vector<std::int64_t>>;

TEST(CountBalances, IsBinomial) {
  EXPECT_EQ(countBalances(32, 4), 4495);
  EXPECT_EQ(countBalances(5, 1), 1);
  EXPECT_EQ(countBalances(5, 5), 1);
  EXPECT_EQ(countBalances(5, 2), 4);
  EXPECT_EQ(countBalances(3, 4), 0);
  EXPECT_EQ(countBalances(3, 0), 0);
  EXPECT_EQ(countBalances(1000, 500), std::numeric_limits<std::int64_t>::max());
}

TEST(AllCompositions, LexicographicOrder) {
  EXPECT_EQ(sim::allCompositions(4, 2), (Balances{{1, 3}, {2, 2}, {3, 1}}));
  EXPECT_EQ(sim::allCompositions(5, 3),
            (Balances{{1, 1, 3}, {1, 2, 2}, {1, 3, 1}, {2, 1, 2}, {2, 2, 1}, {3, 1, 1}}));
  EXPECT_EQ(sim::allCompositions(32, 4).size(), 4495u);
  EXPECT_THROW(sim::allCompositions(2, 3), std::invalid_argument);
}

TEST(MinBottleneckBalance, ExactOptimum) {
  EXPECT_EQ(minBottleneckBalance({1, 2, 3, 4, 5, 6}, 2), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(minBottleneckBalance({5, 5, 1, 1}, 2), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(minBottleneckBalance({1, 1, 1, 1, 1, 1}, 3), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(minBottleneckBalance({7}, 1), (std::vector<std::int64_t>{1}));
  EXPECT_THROW(minBottleneckBalance({1, 2}, 3), std::invalid_argument);
  EXPECT_THROW(minBottleneckBalance({1, 2}, 0), std::invalid_argument);
}

TEST(MinBottleneckBalance, MatchesBruteForce) {
  const std::vector<double> costs{3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  for (std::int64_t n = 1; n <= 5; ++n) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& balance : sim::allCompositions(10, n)) {
      double worst = 0;
      std::size_t l = 0;
      for (std::int64_t size : balance) {
        double sum = 0;
        for (std::int64_t k = 0; k < size; ++k) sum += costs[l++];
        worst = std::max(worst, sum);
      }
      best = std::min(best, worst);
    }
    const auto found = minBottleneckBalance(costs, n);
    double worst = 0;
    std::size_t l = 0;
    for (std::int64_t size : found) {
      double sum = 0;
      for (std::int64_t k = 0; k < size; ++k) sum += costs[l++];
      worst = std::max(worst, sum);
    }
    EXPECT_EQ(worst, best) << "n=" << n;
  }
}

TEST(MinBottleneckBalance, SlowerDeviceGetsLess) {
  // Device 1 is twice as fast: it takes the larger share.
  EXPECT_EQ(sim::minBottleneckWithSpeeds({1, 1, 1, 1, 1, 1}, {1.0, 2.0}), (std::vector<std::int64_t>{2, 4}));
}

TEST(BoundaryNeighbours, MovesOneBoundaryByUpToTwo) {
  EXPECT_EQ(sim::boundaryNeighbours({3, 3}), (Balances{{1, 5}, {2, 4}, {4, 2}, {5, 1}}));
  EXPECT_EQ(sim::boundaryNeighbours({1, 2, 1}), (Balances{{2, 1, 1}, {1, 1, 2}}));
}

// Literal answers of torchgpipe.balance.blockpartition.solve, traced by hand (see
// docs/simulator.md): e.g. [1..6] into 2 starts at [3,3] with normalised sums 0.6 | 2.4, moves
// one layer left to [4,2] (1.2 | 1.8) and stops because 1.8 <= 1.2 + 1.
TEST(BalanceByTime, MatchesTorchgpipe) {
  EXPECT_EQ(balanceByTime({1, 1, 1, 1}, 2), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(balanceByTime({1, 2, 3, 4, 5, 6}, 2), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(balanceByTime({10, 1, 1, 1}, 2), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(balanceByTime({1, 1, 1, 1, 1, 10, 10, 10, 10}, 3), (std::vector<std::int64_t>{6, 1, 2}));
  EXPECT_EQ(balanceByTime({5, 1, 1, 1, 1, 1, 1, 9}, 3), (std::vector<std::int64_t>{2, 2, 4}));
  EXPECT_EQ(balanceByTime({100, 1, 1, 1, 1, 1, 1, 1}, 4), (std::vector<std::int64_t>{2, 2, 2, 2}));
  EXPECT_THROW(balanceByTime({1, 2}, 3), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
