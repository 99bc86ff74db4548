// A multi-process world on this host: ranks of this executable, the rendezvous store, their results.
#pragma once

#include "rank_launcher.h"

#include <pipeprof/runtime/rank_environment.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// A temporary directory removed with its files when the scope ends.
class ScratchDirectory {
 public:
  ScratchDirectory();
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// How the ranks of a local world ended: every rank's result file (nullopt where it wrote none),
/// and the first failure a rank published to the store.
struct LocalWorldRun {
  LaunchOutcome outcome;
  std::vector<std::optional<nlohmann::json>> results;
  std::string publishedFailure;

  bool succeeded() const { return !outcome.interrupted && outcome.firstFailedRank < 0; }
  /// The message of a failed run: the first failure a rank published, or, for a rank that
  /// could say nothing (killed), its exit and what the others saw; `describeRank` names a rank
  /// ("rank 1 (stage 1)").
  std::string failure(const std::function<std::string(int rank)>& describeRank) const;
};

/// Whether the ranks of a local world get CPUs of their own (cpu_binding.h).
enum class CpuBinding { Cores, None };

/// Starts `procs` ranks of this executable with `arguments` (argv[1..]) on 127.0.0.1, with the
/// torchrun variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
/// set, the store hosted here (TORCHELASTIC_USE_AGENT_STORE), each rank's result file named by
/// PIPEPROF_RANK_RESULT in `scratch` and, with CpuBinding::Cores and at least as many CPUs as
/// ranks, rank r's share of this process's CPUs in PIPEPROF_RANK_CPUS (bindToRankCpus); waits
/// for all of them (launchRanks: a failure stops the others after `timeout` and five seconds more,
/// `stop` all of them at once).
LocalWorldRun runLocalWorld(const std::vector<std::string>& arguments, int procs, std::chrono::milliseconds timeout,
                            const ScratchDirectory& scratch, CpuBinding binding, const StopToken& stop);

/// A rank's side: where the launcher wants its result (PIPEPROF_RANK_RESULT), or empty when it
/// was not started by runLocalWorld (torchrun, two shells).
std::string rankResultPath();

/// A rank's side: binds this process to the CPUs the launcher gave it (PIPEPROF_RANK_CPUS);
/// without them, and with CpuBinding::Cores (`--cpu-bind cores` under torchrun), to its share of
/// this process's CPUs by its local rank among the host's LOCAL_WORLD_SIZE ranks. Returns the
/// CPUs, empty when nothing was bound (CpuBinding::None, fewer CPUs than ranks). Throws
/// UsageError for Cores without LOCAL_WORLD_SIZE, std::invalid_argument for a malformed list
/// and std::system_error when the kernel refuses the binding.
std::vector<int> bindToRankCpus(CpuBinding binding, const RankEnvironment& environment);

}  // namespace pipeprof::cli
