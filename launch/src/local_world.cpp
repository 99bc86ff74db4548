// A multi-process world on this host: ranks of the worker running one job, the rendezvous store, their results.
#include "local_world.h"

#include <pipeprof/core/json_file.h>
#include <pipeprof/runtime/c10d_transport.h>

#include <cstdlib>
#include <stdexcept>

namespace pipeprof::launch {

ScratchDirectory::ScratchDirectory() {
  std::string pattern = (std::filesystem::temp_directory_path() / "pipeprof-ranks-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a scratch directory in /tmp");
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string LocalWorldRun::failure(const std::function<std::string(int rank)>& describeRank) const {
  if (outcome.interrupted) return "interrupted: every rank was stopped";
  const int first = outcome.firstFailedRank;
  const RankExit& exit = outcome.ranks.at(static_cast<std::size_t>(first));
  const auto& result = results.at(static_cast<std::size_t>(first));
  const bool reported = result && result->contains("error");
  std::string message;
  if (!exit.exited || !reported) {
    // It could say nothing itself: name it, and what the others saw.
    const bool joined = result && result->value("joined", false);
    message = describeRank(first) + " died" + (joined ? "" : " before it joined the world") + ": " + exit.describe();
    if (!publishedFailure.empty()) message += "\n  " + publishedFailure;
  } else {
    message = publishedFailure.empty() ? result->at("error").get<std::string>() : publishedFailure;
  }
  for (const RankExit& rank : outcome.ranks) {
    if (rank.terminatedByLauncher) {
      message += "\n  " + describeRank(rank.rank) + " did not stop on its own and was terminated";
    }
  }
  return message;
}

LocalWorldRun runLocalWorld(const std::string& worker, RankJob job, int procs, const ScratchDirectory& scratch,
                            CpuBinding binding, const StopToken& stop) {
  job.cpuBinding = CpuBinding::None;  // what the launcher gives is all a rank binds to
  job.rankCpus.clear();
  if (binding == CpuBinding::Cores) job.rankCpus = cpuShares(static_cast<std::size_t>(procs));
  job.resultDir = scratch.path();
  const std::string jobFile = scratch.file("job.json");
  writeRankJob(job, jobFile);

  const std::unique_ptr<RendezvousStore> store = hostRendezvousStore("127.0.0.1", job.timeout);
  RankLaunch launch;
  launch.executable = worker;
  launch.arguments = {"--job", jobFile};
  launch.worldSize = procs;
  launch.grace = job.timeout + std::chrono::seconds(5);
  launch.rankEnvironment = [&](int rank) {
    return std::map<std::string, std::string>{{"RANK", std::to_string(rank)},
                                              {"LOCAL_RANK", std::to_string(rank)},
                                              {"WORLD_SIZE", std::to_string(procs)},
                                              {"LOCAL_WORLD_SIZE", std::to_string(procs)},
                                              {"MASTER_ADDR", "127.0.0.1"},
                                              {"MASTER_PORT", std::to_string(store->port())},
                                              {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  };
  LocalWorldRun run;
  run.outcome = launchRanks(launch, stop);
  for (int rank = 0; rank < procs; ++rank) {
    const std::string path = rankResultPath(job.resultDir, rank);
    run.results.push_back(std::filesystem::exists(path) ? std::optional<nlohmann::json>(readJsonFile(path))
                                                        : std::nullopt);
  }
  if (!run.succeeded()) run.publishedFailure = store->publishedFailure();
  return run;
}

}  // namespace pipeprof::launch
