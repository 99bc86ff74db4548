// A multi-process world on this host: ranks of the worker running one job, the rendezvous store, their results.
#pragma once

#include "rank_launcher.h"

#include <pipeprof/core/stop_token.h>
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/launch/rank_job.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::launch {

/// A temporary directory removed with its files when the scope ends.
class ScratchDirectory {
 public:
  ScratchDirectory();
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  std::string path() const { return path_.string(); }
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

/// Starts `procs` ranks of `worker` (`worker --job <scratch>/job.json`) running `job` on
/// 127.0.0.1, with the torchrun variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT) set, the store hosted here (TORCHELASTIC_USE_AGENT_STORE), the
/// job's resultDir in `scratch` and, with CpuBinding::Cores and at least as many CPUs as ranks,
/// rank r's share of this process's CPUs in its rankCpus; waits for all of them (launchRanks: a
/// failure stops the others after job.timeout and five seconds more, `stop` all at once).
LocalWorldRun runLocalWorld(const std::string& worker, RankJob job, int procs, const ScratchDirectory& scratch,
                            CpuBinding binding, const StopToken& stop);

}  // namespace pipeprof::launch
