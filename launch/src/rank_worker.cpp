// Where the pipeprof-rank worker is: the executable a launcher starts once per rank.
#include <pipeprof/launch/rank_worker.h>

#include "rank_launcher.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#ifndef PIPEPROF_LAUNCH_WORKER_FROM_BIN
#define PIPEPROF_LAUNCH_WORKER_FROM_BIN "../libexec/pipeprof/pipeprof-rank"
#endif

namespace pipeprof::launch {
namespace {

bool isExecutableFile(const std::string& path) {
  std::error_code ignored;
  return !path.empty() && std::filesystem::is_regular_file(path, ignored) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string findRankWorker(const std::string& compiledIn) {
  if (const char* given = std::getenv(kRankWorkerVariable); given != nullptr && *given != '\0') {
    if (!isExecutableFile(given)) {
      throw std::runtime_error(std::string(kRankWorkerVariable) + " names '" + given +
                               "', which is not an executable file: point it at pipeprof-rank, or unset it");
    }
    return given;
  }
  std::string tried = std::string("$") + kRankWorkerVariable + " (not set)";
  std::string installed;
  try {
    installed = (std::filesystem::path(currentExecutable()).parent_path() / PIPEPROF_LAUNCH_WORKER_FROM_BIN)
                    .lexically_normal()
                    .string();
  } catch (const std::exception&) {
  }
  for (const std::string& candidate : {installed, compiledIn}) {
    if (isExecutableFile(candidate)) return candidate;
    if (!candidate.empty()) tried += ", " + candidate;
  }
  throw std::runtime_error("cannot find pipeprof-rank, the worker that runs one rank of a local world: tried " + tried +
                           "; set " + kRankWorkerVariable + " to its path");
}

}  // namespace pipeprof::launch
