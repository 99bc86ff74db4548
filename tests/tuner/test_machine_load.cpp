// Tests for machine_load.cpp: the busy time of /proc/stat's "cpu" line, niced work included.
#include <pipeprof/tuner/machine_load.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace pipeprof::tuner {
namespace {

TEST(MachineLoad, CountsUserNicedSystemAndInterruptTicksButNotIdleOnes) {
  // cpu  user nice system idle iowait irq softirq steal
  const std::string stat = "cpu  100 5000 20 9000 7 3 2 0 0 0\ncpu0 50 2500 10 4500 3 1 1 0 0 0\n";
  EXPECT_EQ(parseProcStatBusyNs(stat, 10'000'000), TimeNs{100 + 5000 + 20 + 3 + 2} * 10'000'000);
  EXPECT_FALSE(parseProcStatBusyNs("cpu0 1 2 3 4 5 6 7\n", 1).has_value()) << "only the all-CPU line counts";
  EXPECT_FALSE(parseProcStatBusyNs("cpu 1 2 3\n", 1).has_value()) << "too few fields";
}

TEST(MachineLoad, ReadsAFileAndSaysNothingWithoutOne) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("pipeprof_stat_" + std::to_string(::getpid()));
  std::ofstream(path) << "cpu  1 0 1 0 0 0 0 0\n";
  EXPECT_EQ(ProcStatLoad(path.string()).busyNs(), 2 * (1'000'000'000 / sysconf(_SC_CLK_TCK)));
  std::filesystem::remove(path);
  EXPECT_FALSE(ProcStatLoad(path.string()).busyNs().has_value());
}

}  // namespace
}  // namespace pipeprof::tuner
