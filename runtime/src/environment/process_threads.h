// This process's threads as Linux lists them: one directory per thread id under /proc/self/task.
#pragma once

#include <set>
#include <string>

namespace pipeprof {

/// The thread ids named by the entries of `taskDir` (a /proc/PID/task directory); empty where
/// it cannot be read. Entries that are not a number are skipped.
std::set<int> threadIdsIn(const std::string& taskDir);

/// threadIdsIn("/proc/self/task"): the ids of this process's threads.
std::set<int> processThreadIds();

}  // namespace pipeprof
