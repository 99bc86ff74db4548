// Tests of runtime/src/memory/host_memory_size: a control group's memory limit, v1 and v2, read
// from hand-made /proc/self/cgroup files and cgroup mounts.
#include "memory/host_memory_size.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace pipeprof {
namespace {

namespace fs = std::filesystem;

/// A temporary directory holding a cgroup file ("cgroup") and a mount ("mount/").
class FakeCgroups : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("pipeprof-cgroups-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "mount");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::optional<std::size_t> limit() {
    return cgroupMemoryLimitBytes((root_ / "cgroup").string(), (root_ / "mount").string());
  }

  fs::path root_;
};

TEST_F(FakeCgroups, UnifiedHierarchyReadsItsGroupsMemoryMax) {
  write("cgroup", "0::/user.slice/job-7\n");
  write("mount/user.slice/job-7/memory.max", "4294967296\n");
  EXPECT_EQ(limit(), std::size_t{4294967296});
  write("mount/user.slice/job-7/memory.max", "max\n");
  EXPECT_FALSE(limit().has_value()) << "max is no limit";
}

TEST_F(FakeCgroups, AContainerSeesItsGroupAtTheRootOfTheMount) {
  write("cgroup", "0::/docker/0123abcd\n");
  write("mount/memory.max", "2147483648\n");
  EXPECT_EQ(limit(), std::size_t{2147483648});
}

TEST_F(FakeCgroups, VersionOneReadsTheMemoryControllersGroup) {
  write("cgroup", "9:pids:/x\n5:cpu,memory:/batch/42\n0::/\n");
  write("mount/memory/batch/42/memory.limit_in_bytes", "1073741824\n");
  EXPECT_EQ(limit(), std::size_t{1073741824});
  // No limit is LONG_MAX rounded down to a page; the root's limit is not the group's.
  write("mount/memory/batch/42/memory.limit_in_bytes", "9223372036854771712\n");
  write("mount/memory/memory.limit_in_bytes", "1073741824\n");
  EXPECT_FALSE(limit().has_value());
}

TEST_F(FakeCgroups, NothingReadableIsNoLimit) {
  EXPECT_FALSE(limit().has_value()) << "no cgroup file";
  write("cgroup", "4:memory:/a\n0::/b\n");
  EXPECT_FALSE(limit().has_value()) << "no mount";
  write("mount/memory/a/memory.limit_in_bytes", "lots\n");
  EXPECT_FALSE(limit().has_value()) << "not a number";
}

TEST(UsableHostMemory, IsAtMostThePhysicalMemory) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageBytes = sysconf(_SC_PAGESIZE);
  ASSERT_GT(pages, 0);
  const std::optional<std::size_t> usable = usableHostMemoryBytes();
  ASSERT_TRUE(usable.has_value());
  EXPECT_GT(*usable, 0u);
  EXPECT_LE(*usable, static_cast<std::size_t>(pages) * static_cast<std::size_t>(pageBytes));
}

}  // namespace
}  // namespace pipeprof
