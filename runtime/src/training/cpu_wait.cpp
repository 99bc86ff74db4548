// Summing the run-queue wait of a process's threads from Linux's schedstat.
#include "training/cpu_wait.h"

#include "environment/process_threads.h"

#include <filesystem>
#include <fstream>
#include <string>

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
  TimeNs total = 0;
  bool any = false;
  for (const int id : threadIdsIn(taskDir)) {
    const std::optional<TimeNs> waitNs = waitNsOf(std::filesystem::path(taskDir) / std::to_string(id) / "schedstat");
    if (!waitNs) continue;  // the thread ended meanwhile
    total += *waitNs;
    any = true;
  }
  return any ? std::optional<TimeNs>(total) : std::nullopt;
}

std::optional<TimeNs> processCpuWaitNs() { return cpuWaitNsOfTasks("/proc/self/task"); }

std::optional<TimeNs> threadCpuWaitNs() { return waitNsOf("/proc/thread-self/schedstat"); }

}  // namespace pipeprof
