// A test's own directory for the files it writes: empty when the test starts, gone when it ends.
//
//   class SweepTest : public ::testing::Test {
//     test::ScratchDir scratch_{"tuner_sweep"};  // <tmp>/pipeprof_tuner_sweep_<pid>_<test name>
//     const fs::path dir_ = scratch_.path();
//   };
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace pipeprof::test {

class ScratchDir {
 public:
  /// <system temp dir>/pipeprof_<name>_<pid>_<the running test's name>, emptied and created:
  /// the pid keeps concurrent test binaries apart, the test's name a binary's tests.
  explicit ScratchDir(const std::string& name) {
    std::string leaf = "pipeprof_" + name + "_" + std::to_string(::getpid());
    if (const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
      leaf += std::string("_") + info->name();
    }
    path_ = std::filesystem::temp_directory_path() / leaf;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // a destructor must not throw; a directory left behind is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace pipeprof::test
