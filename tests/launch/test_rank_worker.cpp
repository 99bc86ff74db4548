// Tests for rank_worker.h and worker_main.cpp: where findRankWorker looks, in order, and what the worker refuses.
#include <pipeprof/launch/rank_job.h>
#include <pipeprof/launch/rank_worker.h>

#include "support/run_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

namespace pipeprof::launch {
namespace {

using ::testing::HasSubstr;

/// Sets (or unsets) PIPEPROF_RANK_WORKER for the scope, and restores it.
class WorkerVariable {
 public:
  explicit WorkerVariable(const std::optional<std::string>& value) {
    if (const char* old = std::getenv(kRankWorkerVariable)) old_ = old;
    if (value) {
      setenv(kRankWorkerVariable, value->c_str(), 1);
    } else {
      unsetenv(kRankWorkerVariable);
    }
  }
  ~WorkerVariable() {
    if (old_) {
      setenv(kRankWorkerVariable, old_->c_str(), 1);
    } else {
      unsetenv(kRankWorkerVariable);
    }
  }

 private:
  std::optional<std::string> old_;
};

std::string errorOf(const std::string& compiledIn) {
  try {
    findRankWorker(compiledIn);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

TEST(RankWorker, ThisBuildsWorkerIsCompiledInAndFound) {
  const WorkerVariable unset(std::nullopt);
  const std::string found = findRankWorker();
  EXPECT_EQ(found, PIPEPROF_LAUNCH_RANK_WORKER);
  EXPECT_EQ(std::filesystem::path(found).filename(), "pipeprof-rank");
  EXPECT_TRUE(std::filesystem::is_regular_file(found));
}

TEST(RankWorker, TheVariableComesFirst) {
  const WorkerVariable set(std::string("/bin/sh"));
  EXPECT_EQ(findRankWorker(), "/bin/sh");
}

TEST(RankWorker, AVariableNamingNoExecutableIsAnError) {
  const WorkerVariable set(std::string("/no/such/pipeprof-rank"));
  EXPECT_THAT(errorOf(PIPEPROF_LAUNCH_RANK_WORKER),
              HasSubstr("PIPEPROF_RANK_WORKER names '/no/such/pipeprof-rank', which is not an executable file"));
}

TEST(RankWorker, NothingFoundNamesEveryPlaceTried) {
  const WorkerVariable unset(std::nullopt);
  const std::string error = errorOf("/no/such/build/pipeprof-rank");
  EXPECT_THAT(error, HasSubstr("cannot find pipeprof-rank"));
  EXPECT_THAT(error, HasSubstr("$PIPEPROF_RANK_WORKER (not set)"));
  EXPECT_THAT(error, HasSubstr("libexec/pipeprof/pipeprof-rank"));  // next to this executable
  EXPECT_THAT(error, HasSubstr("/no/such/build/pipeprof-rank"));
  EXPECT_THAT(error, HasSubstr("set PIPEPROF_RANK_WORKER to its path"));
}

TEST(RankWorker, TheWorkerRefusesABadCommandLineJobOrEnvironmentWithExitTwo) {
  const std::string worker = pipeprof::test::kRankWorker;
  EXPECT_EQ(pipeprof::test::runProcess({worker, "--help"}).code, 0);
  pipeprof::test::ProcessResult r = pipeprof::test::runProcess({worker});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("usage: pipeprof-rank --job FILE"));

  const std::string path = (std::filesystem::temp_directory_path() / "pipeprof_worker_bad_job.json").string();
  const RankJob train;
  nlohmann::json job = toJson(train);
  job["kind"] = "dance";
  { std::ofstream(path) << job.dump(); }
  r = pipeprof::test::runProcess({worker, "--job", path}, {{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ": $.kind: expected \"train\" or \"link_benchmark\""));

  RankJob link;
  link.kind = RankJobKind::LinkBenchmark;
  { std::ofstream(path) << toJson(link).dump(); }
  r = pipeprof::test::runProcess({worker, "--job", path});  // not started as a rank
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("RANK and WORLD_SIZE are not set"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pipeprof::launch
