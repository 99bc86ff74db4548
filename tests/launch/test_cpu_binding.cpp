// Tests of cpu_binding.h: each local rank's share of the host's CPUs, CPU lists, binding.
#include <pipeprof/launch/cpu_binding.h>

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace pipeprof::launch {
namespace {

TEST(CpuBinding, RanksSplitTheCpusInContiguousBlocksTheFirstOnesLarger) {
  const std::vector<int> cpus{0, 1, 2, 3, 4, 6, 7};  // CPU 5 not allowed
  EXPECT_EQ(cpuShare(cpus, 0, 2), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cpuShare(cpus, 1, 2), (std::vector<int>{4, 6, 7}));
  EXPECT_EQ(cpuShare(cpus, 0, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(cpuShare(cpus, 1, 3), (std::vector<int>{3, 4}));
  EXPECT_EQ(cpuShare(cpus, 2, 3), (std::vector<int>{6, 7}));
  EXPECT_EQ(cpuShare({0, 1}, 1, 2), (std::vector<int>{1}));
  EXPECT_EQ(cpuShare({0, 1}, 0, 1), (std::vector<int>{0, 1}));
}

TEST(CpuBinding, FewerCpusThanRanksOrABadRankBindNobody) {
  EXPECT_TRUE(cpuShare({0, 1}, 0, 3).empty());
  EXPECT_TRUE(cpuShare({0, 1}, 2, 2).empty());
  EXPECT_TRUE(cpuShare({0, 1}, -1, 2).empty());
  EXPECT_TRUE(cpuShare({0, 1}, 0, 0).empty());
}

TEST(CpuBinding, AProcesssWorkersShareItsCpusAsItsRanksWould) {
  const std::vector<int> cpus = allowedCpus();
  ASSERT_FALSE(cpus.empty());
  const std::vector<std::vector<int>> one = cpuShares(1);
  ASSERT_EQ(one.size(), 1U);
  EXPECT_EQ(one[0], cpus);
  if (cpus.size() >= 2) {
    const std::vector<std::vector<int>> two = cpuShares(2);
    ASSERT_EQ(two.size(), 2U);
    EXPECT_EQ(two[0], cpuShare(cpus, 0, 2));
    EXPECT_EQ(two[1], cpuShare(cpus, 1, 2));
  }
  EXPECT_TRUE(cpuShares(cpus.size() + 1).empty()) << "fewer CPUs than workers: none bound";
  EXPECT_TRUE(cpuShares(0).empty());
}

TEST(CpuBinding, CpuListsRoundTrip) {
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(formatCpuList({5}), "5");
  EXPECT_EQ(formatCpuList({1, 3, 4}), "1,3-4");
  EXPECT_EQ(formatCpuList({}), "");
  EXPECT_EQ(parseCpuList("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parseCpuList("7"), (std::vector<int>{7}));
  for (const char* bad : {"", "a", "3-1", "1,1", "2,1", "1-", "-1", "1,,2", "0-3,"}) {
    EXPECT_THROW(parseCpuList(bad), std::invalid_argument) << bad;
  }
  try {
    parseCpuList("x");
    FAIL();
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "'x' is not a CPU list such as 0-3,8");
  }
}

TEST(CpuBinding, BindingNarrowsTheProcessAndTheThreadsItStartsAfterwards) {
  const std::vector<int> before = allowedCpus();
  ASSERT_FALSE(before.empty());
  std::vector<int> inThread;
  bindToCpus({before.front()});
  EXPECT_EQ(allowedCpus(), (std::vector<int>{before.front()}));
  std::thread([&] { inThread = allowedCpus(); }).join();
  EXPECT_EQ(inThread, (std::vector<int>{before.front()}));
  bindToCpus(before);
  EXPECT_EQ(allowedCpus(), before);
  EXPECT_THROW(bindToCpus({-1}), std::invalid_argument);
}

TEST(CpuBinding, NamesReadBackAndOthersAreRefused) {
  EXPECT_EQ(parseCpuBinding(cpuBindingName(CpuBinding::Cores)), CpuBinding::Cores);
  EXPECT_EQ(parseCpuBinding(cpuBindingName(CpuBinding::None)), CpuBinding::None);
  try {
    parseCpuBinding("numa");
    FAIL();
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "unknown CPU binding 'numa': expected cores or none");
  }
}

}  // namespace
}  // namespace pipeprof::launch
