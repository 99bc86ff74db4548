// Summing the run-queue wait of a process's threads from Linux's schedstat.
#include "training/cpu_wait.h"

#include <filesystem>
#include <fstream>

namespace pipeprof {

namespace {

std::optional<TimeNs> waitNsOf(const std::filesystem::path& schedstat) {
  // schedstat: time on a CPU, time waiting on a run queue (ns), timeslices
  std::ifstream file(schedstat);
  long long runNs = 0;
  long long waitNs = 0;
  if (!(file >> runNs >> waitNs)) return std::nullopt;
  return waitNs;
}

}  // namespace

std::optional<TimeNs> cpuWaitNsOfTasks(const std::string& taskDir) {
  std::error_code error;
  std::filesystem::directory_iterator tasks(taskDir, error);
  if (error) return std::nullopt;
  TimeNs total = 0;
  bool any = false;
  for (const auto& task : tasks) {
    const std::optional<TimeNs> waitNs = waitNsOf(task.path() / "schedstat");
    if (!waitNs) continue;  // the thread ended meanwhile
    total += *waitNs;
    any = true;
  }
  return any ? std::optional<TimeNs>(total) : std::nullopt;
}

std::optional<TimeNs> processCpuWaitNs() { return cpuWaitNsOfTasks("/proc/self/task"); }

std::optional<TimeNs> threadCpuWaitNs() { return waitNsOf("/proc/thread-self/schedstat"); }

}  // namespace pipeprof
