// Tests for workers bound to CPUs: a worker's thread kept on the CPUs it was given, and a CPU
// Pipe whose stages run on their devices' workers' CPUs (PipeOptions::workerCpus).
#include "threaded/worker.h"

#include <pipeprof/runtime/pipe.h>

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <torch/torch.h>

#include <map>
#include <mutex>
#include <stdexcept>

namespace pipeprof {
namespace {

/// The CPUs the calling thread may run on, ascending.
std::vector<int> threadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(Worker, RunsItsTasksOnTheCpusItWasGiven) {
  const std::vector<int> cpus = threadCpus();
  ASSERT_FALSE(cpus.empty());
  Worker bound({cpus.back()});
  std::vector<int> seen;
  bound.submit([&] { seen = threadCpus(); }).get();
  EXPECT_EQ(seen, std::vector<int>{cpus.back()});

  Worker free;
  free.submit([&] { seen = threadCpus(); }).get();
  EXPECT_EQ(seen, cpus) << "no CPUs given: the process's mask, untouched";
}

/// Records, per layer name, the CPUs the thread running its forward may use.
struct CpuProbeImpl : torch::nn::Module {
  CpuProbeImpl(std::string name, std::map<std::string, std::vector<int>>& seen, std::mutex& mutex)
      : name(std::move(name)), seen(&seen), mutex(&mutex) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const std::lock_guard<std::mutex> lock(*mutex);
    (*seen)[name] = threadCpus();
    return x * 2;
  }
  std::string name;
  std::map<std::string, std::vector<int>>* seen;
  std::mutex* mutex;
};
TORCH_MODULE(CpuProbe);

/// The CPUs each layer's forward ran on in an interleaved Pipe of four one-layer stages on two
/// CPU devices (stages 0 and 2 on device 0) whose workers got `workerCpus`.
std::map<std::string, std::vector<int>> cpusOfStages(std::vector<std::vector<int>> workerCpus) {
  std::map<std::string, std::vector<int>> seen;
  std::mutex mutex;
  torch::nn::Sequential model;
  for (const char* name : {"a", "b", "c", "d"}) model->push_back(name, CpuProbe(name, seen, mutex));
  PipeOptions options;
  options.devices = {torch::kCPU, torch::kCPU};
  options.chunks = 2;
  options.schedule = ScheduleKind::Interleaved;
  options.stagesPerDevice = 2;
  options.workerCpus = std::move(workerCpus);
  Pipe pipe(model, {1, 1, 1, 1}, options);
  torch::NoGradGuard noGrad;
  pipe.forward(torch::ones({2, 3}));
  return seen;
}

TEST(WorkerCpus, EachDevicesStagesRunOnItsWorkersCpus) {
  const std::vector<int> cpus = threadCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "two workers bound apart need two CPUs";
  const std::map<std::string, std::vector<int>> bound = cpusOfStages({{cpus[0]}, {cpus[1]}});
  EXPECT_EQ(bound.at("a"), std::vector<int>{cpus[0]}) << "stage 0 on device 0";
  EXPECT_EQ(bound.at("b"), std::vector<int>{cpus[1]}) << "stage 1 on device 1";
  EXPECT_EQ(bound.at("c"), std::vector<int>{cpus[0]}) << "stage 2 on device 0 again";
  EXPECT_EQ(bound.at("d"), std::vector<int>{cpus[1]});
  const std::map<std::string, std::vector<int>> half = cpusOfStages({{cpus[1]}, {}});
  EXPECT_EQ(half.at("a"), std::vector<int>{cpus[1]});
  EXPECT_EQ(half.at("b"), cpus) << "an empty list leaves that worker unbound";
  for (const auto& [layer, seen] : cpusOfStages({})) EXPECT_EQ(seen, cpus) << layer << ": none bound";
}

TEST(WorkerCpus, AListPerDeviceOrNone) {
  try {
    cpusOfStages({{0}});
    FAIL() << "one list for two devices";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "workerCpus holds 1 CPU list(s) for 2 pipeline devices: give one per device, or none");
  }
  EXPECT_THROW(cpusOfStages({{0}, {-1}}), std::invalid_argument) << "no CPU -1";
  EXPECT_THROW(cpusOfStages({{0}, {CPU_SETSIZE}}), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
