// Tests for local_run.h: real pipeprof-rank processes over Gloo on 127.0.0.1, started from a job.
#include <pipeprof/launch/local_run.h>
#include <pipeprof/launch/rank_worker.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

namespace pipeprof::launch {
namespace {

using ::testing::HasSubstr;

/// mlp --width 16 --depth 3 (5 layers) on two CPU ranks, balance 2,3, 1f1b, batch 8 in 4.
RankJob tinyJob() {
  RankJob job;
  job.model.name = "mlp";
  job.model.options.width = 16;
  job.model.options.depth = 3;
  job.model.options.seed = 7;
  job.model.threads = 1;
  job.candidate.balance = {2, 3};
  job.candidate.schedule = ScheduleKind::OneFOneB;
  job.candidate.chunks = 4;
  job.candidate.batch = 8;
  job.devices = {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")};
  job.steps = 2;
  job.warmupSteps = 1;
  job.optimizer.learningRate = 0.5;
  job.timeout = std::chrono::seconds(30);
  return job;
}

LocalRunOptions twoRanks() {
  LocalRunOptions options;
  options.procs = 2;
  options.worker = findRankWorker();
  return options;
}

/// The child processes of this process (every thread's), e.g. ranks left behind.
std::set<int> children() {
  std::set<int> pids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream file(task.path() / "children");
    int pid = 0;
    while (file >> pid) pids.insert(pid);
  }
  return pids;
}

TEST(LocalRun, TwoRanksTrainToTheThreadedPipesLosses) {
  const RankJob job = tinyJob();
  RankJob traced = job;
  traced.tracePath = "trace.json";
  const LocalRun run = launchLocalRun(traced, twoRanks());
  EXPECT_TRUE(children().empty()) << "a rank process was left behind";

  Model model = buildModel(job.model);
  TrainingOptions options;
  options.devices = {torch::kCPU, torch::kCPU};
  options.balance = job.candidate.balance;
  options.schedule = job.candidate.schedule;
  options.chunks = job.candidate.chunks;
  options.batch = job.candidate.batch;
  options.steps = job.steps;
  options.warmupSteps = job.warmupSteps;
  options.optimizer = job.optimizer;
  const TrainingResult threaded = trainAndMeasure(model, options);
  ASSERT_EQ(run.losses.size(), threaded.losses.size());
  for (std::size_t s = 0; s < run.losses.size(); ++s) {
    EXPECT_NEAR(run.losses[s], threaded.losses[s], 1e-5 * std::abs(threaded.losses[s]) + 1e-7) << "step " << s;
  }
  EXPECT_EQ(run.measurement.stepNs.size(), 2u);
  EXPECT_EQ(run.measurement.peakBytes.size(), 2u);
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[1].at("stages"), nlohmann::json::array({1}));
  EXPECT_EQ(run.layout.at("procs"), 2);
  EXPECT_EQ(run.layout.at("transport"), "gloo");
  std::set<std::string> processes;
  for (const TraceEvent& event : run.trace.events) processes.insert(event.device.substr(0, 7));
  EXPECT_TRUE(processes.count("rank 0 ") && processes.count("rank 1 ")) << "the merged trace has both ranks";
}

TEST(LocalRun, AStopRequestStopsEveryRankAtOnce) {
  RankJob job = tinyJob();
  job.steps = 1000000;
  StopSource source;
  std::thread stopper([&source] {
    // Once both ranks run (joining the world or stepping: either way they stop).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (children().size() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    source.requestStop();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(launchLocalRun(job, twoRanks(), source.token()), RunInterrupted);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(children().empty()) << "a rank process was left behind";
}

TEST(LocalRun, AFailedRankIsNamed) {
  RankJob job = tinyJob();
  job.candidate.balance = {2, 2};  // 4 of the model's 5 layers: every rank refuses it
  try {
    launchLocalRun(job, twoRanks());
    FAIL() << "expected the run to fail";
  } catch (const std::runtime_error& error) {
    // Whichever rank fails first names itself and its stage.
    EXPECT_THAT(error.what(), ::testing::ContainsRegex("rank [01] \\([^)]*\\) \\(stage [01]\\) failed: .*balance"));
  }
  EXPECT_TRUE(children().empty());
}

TEST(LocalRun, MistakesAreRefusedBeforeAnyRankStarts) {
  LocalRunOptions three = twoRanks();
  three.procs = 3;
  EXPECT_THAT([&] { launchLocalRun(tinyJob(), three); }, ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr(
                                                             "3 processes but the job names 2 pipeline devices")));
  LocalRunOptions missing = twoRanks();
  missing.worker = "/no/such/pipeprof-rank";
  EXPECT_THAT([&] { launchLocalRun(tinyJob(), missing); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("/no/such/pipeprof-rank")));
  EXPECT_TRUE(children().empty());
}

TEST(LocalRun, TheLinkBetweenTwoRanksIsMeasured) {
  RankJob job;
  job.kind = RankJobKind::LinkBenchmark;
  job.repeats = 1;
  job.timeout = std::chrono::seconds(30);
  const LinkMeasurement measurement = measureLocalLink(job, twoRanks());
  EXPECT_EQ(measurement.samples.size(), defaultLinkSizes().size()) << "4 KiB to 64 MiB";
  EXPECT_GE(measurement.link.latencyNs, 0);
  EXPECT_GT(measurement.link.bandwidthBytesPerS, 0.0);
  EXPECT_TRUE(children().empty());
}

}  // namespace
}  // namespace pipeprof::launch
