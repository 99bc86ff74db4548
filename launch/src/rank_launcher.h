// Starts the ranks of a local multi-process world as child processes, watches them, leaves none behind.
#pragma once

#include <pipeprof/core/stop_token.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pipeprof::launch {

/// What to start: `worldSize` copies of `executable` with `arguments`, each with the
/// environment of this process plus rankEnvironment(rank).
struct RankLaunch {
  std::string executable;
  std::vector<std::string> arguments;  ///< argv[1..]
  int worldSize = 1;
  std::function<std::map<std::string, std::string>(int rank)> rankEnvironment;
  /// After the first rank failed, how long the others get to stop on their own before they
  /// are terminated (SIGTERM, then SIGKILL two seconds later).
  std::chrono::milliseconds grace{10000};
};

/// How one rank ended.
struct RankExit {
  int rank = 0;
  int pid = 0;
  bool exited = false;  ///< exited on its own with `code`; else killed by `signal`
  int code = 0;
  int signal = 0;
  bool terminatedByLauncher = false;  ///< the launcher stopped it (after another's failure, or Ctrl-C)

  bool succeeded() const { return exited && code == 0; }
  /// "exit code 1", "killed by signal 9 (Killed)".
  std::string describe() const;
};

struct LaunchOutcome {
  std::vector<RankExit> ranks;  ///< by rank
  int firstFailedRank = -1;     ///< the first rank seen to fail, or -1
  /// Stopped on request (the StopToken), or a rank was killed by SIGINT (a terminal's Ctrl-C
  /// reaches the whole process group), before any rank failed.
  bool interrupted = false;
};

/// Starts every rank (each dies with the launcher: PR_SET_PDEATHSIG), waits for all of them,
/// and stops the rest once one fails (after `grace`) or when `stop` asks or a rank was killed
/// by SIGINT (at once: SIGTERM, then SIGKILL two seconds later). Installs no signal handler: a
/// program that wants Ctrl-C to stop the ranks requests stop on the token's source. Returns
/// when no rank is left. Throws std::runtime_error when a rank cannot be started (the ones
/// already started are stopped first).
LaunchOutcome launchRanks(const RankLaunch& launch, const StopToken& stop);

/// The path of the running executable (/proc/self/exe).
std::string currentExecutable();

}  // namespace pipeprof::launch
