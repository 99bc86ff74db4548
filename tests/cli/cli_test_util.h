// Shared helpers of the CLI's end-to-end tests: running the pipeprof executable and shell lines.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace pipeprof::testing {

inline const std::string kPipeprof = PIPEPROF_BINARY_DIR "/cli/pipeprof";

struct Result {
  int code = -1;
  std::string out;  ///< stdout and stderr together
};

/// Runs a shell command line (stdin from /dev/null), stdout and stderr together.
inline Result shell(const std::string& commandLine) {
  Result result;
  const std::string command = "(" + commandLine + ") 2>&1 < /dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) result.out += buffer.data();
  const int status = pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Runs `pipeprof <args>`.
inline Result pipeprof(const std::string& args) { return shell(kPipeprof + " " + args); }

}  // namespace pipeprof::testing
