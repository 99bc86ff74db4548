// The whole profile's budget shared among its passes (runtime/src/layer_profiling/profile_budget.h).
#include "layer_profiling/profile_budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace pipeprof::layer_profiling {
namespace {

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(ProfileBudget, AddsEachPassOverTheSizesInTheOrderTheyFirstRan) {
  ProfileBudget budget(10.0, {2, 4});
  budget.time("memory", 2, [] { sleepMs(5); });
  budget.time(kTimedRunsPass, 2, [] { sleepMs(5); });
  budget.time("memory", 4, [] { sleepMs(5); });
  const ProfilingTime& spent = budget.spent();
  ASSERT_EQ(spent.passes.size(), 2u);
  EXPECT_EQ(spent.passes[0].name, "memory");
  EXPECT_EQ(spent.passes[1].name, kTimedRunsPass);
  EXPECT_GE(spent.passes[0].seconds, 0.010);
  EXPECT_GE(spent.passes[1].seconds, 0.005);
  EXPECT_DOUBLE_EQ(spent.seconds(), spent.passes[0].seconds + spent.passes[1].seconds);
  EXPECT_DOUBLE_EQ(spent.budgetSeconds, 10.0);
}

TEST(ProfileBudget, ReturnsWhatTheRunReturns) {
  ProfileBudget budget(1.0, {1});
  EXPECT_EQ(budget.time("kernels", 1, [] { return 7; }), 7);
}

TEST(ProfileBudget, TheTimedRunsShareWhatTheUntimedPassesOfLaterSizesLeave) {
  ProfileBudget budget(10.0, {2, 4, 8});
  budget.time("memory", 2, [] { sleepMs(20); });
  const double untimed = budget.spent().seconds();
  // Sizes 4 and 8 are expected to take 2x and 4x size 2's untimed passes; three sizes share the
  // rest (the time spent outside the passes, here next to none, counts too).
  const double share = budget.timedRunsSeconds(2);
  EXPECT_LE(share, (10.0 - untimed - 6 * untimed) / 3);
  EXPECT_GT(share, (10.0 - untimed - 6 * untimed) / 3 - 0.1);
  // The timed runs themselves do not count as a size's untimed passes.
  budget.time(kTimedRunsPass, 2, [] { sleepMs(20); });
  budget.time("memory", 4, [] { sleepMs(20); });
  const double elapsed = budget.spent().seconds();
  const double memory4 = budget.spent().passes[0].seconds - untimed;
  EXPECT_LE(budget.timedRunsSeconds(4), (10.0 - elapsed - 2 * memory4) / 2);
  EXPECT_GT(budget.timedRunsSeconds(4), (10.0 - elapsed - 2 * memory4) / 2 - 0.1);
}

TEST(ProfileBudget, NothingIsLeftOnceTheBudgetIsSpent) {
  ProfileBudget budget(0.01, {1, 2});
  budget.time("memory", 1, [] { sleepMs(20); });
  EXPECT_EQ(budget.timedRunsSeconds(1), 0.0);
}

TEST(ProfileBudget, RecordsTheFewestTimedRunsOfAnySize) {
  ProfileBudget budget(1.0, {1, 2});
  budget.recordTimedRuns(12);
  budget.recordTimedRuns(4);
  budget.recordTimedRuns(9);
  EXPECT_EQ(budget.spent().fewestTimedRuns, 4);
}

}  // namespace
}  // namespace pipeprof::layer_profiling
