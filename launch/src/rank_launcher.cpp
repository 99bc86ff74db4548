// Starts the ranks of a local multi-process world as child processes, watches them, leaves none behind.
#include "rank_launcher.h"

#include <csignal>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace pipeprof::launch {
namespace {

pid_t startRank(const RankLaunch& launch, int rank) {
  std::vector<std::string> environment;
  const std::map<std::string, std::string> extra =
      launch.rankEnvironment ? launch.rankEnvironment(rank) : std::map<std::string, std::string>{};
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    if (extra.count(text.substr(0, text.find('='))) == 0) environment.push_back(text);
  }
  for (const auto& [name, value] : extra) environment.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> arguments{launch.executable};
  arguments.insert(arguments.end(), launch.arguments.begin(), launch.arguments.end());
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("could not start rank ") + std::to_string(rank) + ": " + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the launcher
    if (getppid() != parent) _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(launch.executable.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

void signalRunning(std::vector<RankExit>& ranks, const std::vector<bool>& running, int signal) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!running[r]) continue;
    kill(ranks[r].pid, signal);
    ranks[r].terminatedByLauncher = true;
  }
}

}  // namespace

std::string RankExit::describe() const {
  if (exited) return "exit code " + std::to_string(code);
  return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

std::string currentExecutable() {
  std::vector<char> buffer(4096);
  const ssize_t length = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) throw std::runtime_error("cannot find the pipeprof executable (/proc/self/exe)");
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

LaunchOutcome launchRanks(const RankLaunch& launch, const StopToken& stop) {
  LaunchOutcome outcome;
  outcome.ranks.resize(static_cast<std::size_t>(launch.worldSize));
  std::vector<bool> running(static_cast<std::size_t>(launch.worldSize), false);
  for (int rank = 0; rank < launch.worldSize; ++rank) {
    try {
      outcome.ranks[static_cast<std::size_t>(rank)].rank = rank;
      outcome.ranks[static_cast<std::size_t>(rank)].pid = startRank(launch, rank);
      running[static_cast<std::size_t>(rank)] = true;
    } catch (...) {
      signalRunning(outcome.ranks, running, SIGKILL);
      for (std::size_t r = 0; r < running.size(); ++r) {
        if (running[r]) waitpid(outcome.ranks[r].pid, nullptr, 0);
      }
      throw;
    }
  }
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> terminateAt;
  std::optional<Clock::time_point> killAt;
  std::size_t left = running.size();
  while (left > 0) {
    for (std::size_t r = 0; r < running.size(); ++r) {
      if (!running[r]) continue;
      int status = 0;
      if (waitpid(outcome.ranks[r].pid, &status, WNOHANG) != outcome.ranks[r].pid) continue;
      running[r] = false;
      --left;
      RankExit& exit = outcome.ranks[r];
      exit.exited = WIFEXITED(status);
      exit.code = exit.exited ? WEXITSTATUS(status) : 0;
      exit.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      // A terminal's Ctrl-C reaches the ranks too (the foreground process group): not a failure.
      const bool interruptedRank = exit.signal == SIGINT && !exit.terminatedByLauncher;
      if (interruptedRank && outcome.firstFailedRank < 0 && !outcome.interrupted) {
        outcome.interrupted = true;
        terminateAt = Clock::now();
      }
      if (!exit.succeeded() && outcome.firstFailedRank < 0 && !outcome.interrupted) {
        outcome.firstFailedRank = static_cast<int>(r);
        terminateAt = Clock::now() + launch.grace;
      }
    }
    if (stop.stopRequested() && !outcome.interrupted && outcome.firstFailedRank < 0) {
      outcome.interrupted = true;
      terminateAt = Clock::now();
    }
    const Clock::time_point now = Clock::now();
    if (terminateAt && now >= *terminateAt && !killAt) {
      signalRunning(outcome.ranks, running, SIGTERM);
      killAt = now + std::chrono::seconds(2);
    }
    if (killAt && now >= *killAt) signalRunning(outcome.ranks, running, SIGKILL);
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return outcome;
}

}  // namespace pipeprof::launch
