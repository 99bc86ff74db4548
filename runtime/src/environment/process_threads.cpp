// Listing a process's threads from /proc.
#include "environment/process_threads.h"

#include <filesystem>

namespace pipeprof {

std::set<int> threadIdsIn(const std::string& taskDir) {
  std::set<int> ids;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator(taskDir, error)) {
    try {
      ids.insert(std::stoi(task.path().filename().string()));
    } catch (const std::exception&) {
      // not a thread id
    }
  }
  return ids;
}

std::set<int> processThreadIds() { return threadIdsIn("/proc/self/task"); }

}  // namespace pipeprof
