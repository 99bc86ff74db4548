// Tests for cpu_wait.cpp and the training loops' per-step CPU wait: schedstat summed over tasks, one wait per step.
#include "training/cpu_wait.h"

#include <pipeprof/runtime/in_process_transport.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/training_loop.h>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace pipeprof {
namespace {

namespace fs = std::filesystem;

TEST(CpuWait, SumsTheRunQueueWaitOfEveryTaskThatStillHasOne) {
  const fs::path tasks = fs::temp_directory_path() / ("pipeprof_tasks_" + std::to_string(::getpid()));
  fs::create_directories(tasks / "101");
  fs::create_directories(tasks / "102");
  fs::create_directories(tasks / "103");  // ended: no schedstat any more
  std::ofstream(tasks / "101" / "schedstat") << "1000 250 3\n";
  std::ofstream(tasks / "102" / "schedstat") << "5 40 1\n";
  EXPECT_EQ(cpuWaitNsOfTasks(tasks.string()), TimeNs{290});
  fs::remove_all(tasks);
  EXPECT_FALSE(cpuWaitNsOfTasks(tasks.string()).has_value());
}

TEST(CpuWait, ThisProcessAndThisThreadHaveOne) {
  ASSERT_TRUE(processCpuWaitNs().has_value()) << "Linux keeps schedstat per thread";
  ASSERT_TRUE(threadCpuWaitNs().has_value());
  EXPECT_GE(*processCpuWaitNs(), *threadCpuWaitNs()) << "the process's threads include this one";
}

Model tinyModel() {
  torch::manual_seed(0);
  Model model;
  model.name = "tiny";
  model.sequential = torch::nn::Sequential(torch::nn::Linear(4, 4), torch::nn::ReLU(), torch::nn::Linear(4, 4));
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    torch::manual_seed(seed);
    return Batch{torch::randn({batch, 4}), torch::randn({batch, 4})};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  return model;
}

TrainingOptions twoDevices() {
  TrainingOptions options;
  options.balance = {2, 1};
  options.devices = {torch::kCPU, torch::kCPU};
  options.chunks = 2;
  options.batch = 4;
  options.warmupSteps = 1;
  options.steps = 3;
  return options;
}

TEST(CpuWait, TheThreadedLoopRecordsOneWaitPerMeasuredStep) {
  Model model = tinyModel();
  const TrainingResult result = trainAndMeasure(model, twoDevices());
  ASSERT_EQ(result.measurement.stepCpuWaitNs.size(), 3u);
  for (const TimeNs waitNs : result.measurement.stepCpuWaitNs) EXPECT_GE(waitNs, 0);
}

TEST(CpuWait, EveryRankRecordsOneWaitPerMeasuredStep) {
  InProcessWorld world(2, std::chrono::seconds(30));
  std::vector<Model> models{tinyModel(), tinyModel()};
  std::vector<RankTrainingResult> results(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      auto transport = world.transport(rank);
      try {
        results[static_cast<std::size_t>(rank)] =
            trainRank(models[static_cast<std::size_t>(rank)], twoDevices(), *transport);
      } catch (...) {
        world.kill(rank);
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (const RankTrainingResult& result : results) {
    EXPECT_EQ(result.stepNs.size(), 3u);
    EXPECT_EQ(result.stepCpuWaitNs.size(), 3u) << "each rank's stage thread, step by step";
  }
}

}  // namespace
}  // namespace pipeprof
