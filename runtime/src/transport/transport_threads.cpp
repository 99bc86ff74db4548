// Scheduling the transport's threads as SCHED_BATCH (sched_setscheduler on each thread id).
#include "transport/transport_threads.h"

#include <sched.h>

#include <filesystem>
#include <string>

namespace pipeprof {

std::set<int> processThreadIds() {
  std::set<int> ids;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    try {
      ids.insert(std::stoi(task.path().filename().string()));
    } catch (const std::exception&) {
      // not a thread id
    }
  }
  return ids;
}

int scheduleAsBatch(const std::set<int>& threads) {
  int moved = 0;
  const sched_param parameters{};  // priority 0, the only one SCHED_BATCH takes
  for (const int id : threads) {
    // On Linux a thread id names that one thread; its nice value stays.
    if (sched_setscheduler(id, SCHED_BATCH, &parameters) == 0) ++moved;
  }
  return moved;
}

}  // namespace pipeprof
