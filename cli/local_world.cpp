// A multi-process world on this host: ranks of this executable, the rendezvous store, their results.
#include "local_world.h"

#include "commands.h"
#include "cpu_binding.h"

#include <pipeprof/core/json_file.h>
#include <pipeprof/runtime/c10d_transport.h>

#include <cstdlib>
#include <stdexcept>

namespace pipeprof::cli {
namespace {

constexpr const char* kResultVariable = "PIPEPROF_RANK_RESULT";
constexpr const char* kCpusVariable = "PIPEPROF_RANK_CPUS";

std::string resultFile(int rank) { return "rank" + std::to_string(rank) + ".json"; }

}  // namespace

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
    message = describeRank(first) + " died: " + exit.describe();
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

LocalWorldRun runLocalWorld(const std::vector<std::string>& arguments, int procs, std::chrono::milliseconds timeout,
                            const ScratchDirectory& scratch, CpuBinding binding, const StopToken& stop) {
  const std::vector<int> cpus = binding == CpuBinding::Cores ? allowedCpus() : std::vector<int>{};
  const std::unique_ptr<RendezvousStore> store = hostRendezvousStore("127.0.0.1", timeout);
  RankLaunch launch;
  launch.executable = currentExecutable();
  launch.arguments = arguments;
  launch.worldSize = procs;
  launch.grace = timeout + std::chrono::seconds(5);
  launch.rankEnvironment = [&](int rank) {
    std::map<std::string, std::string> environment{{"RANK", std::to_string(rank)},
                                                   {"LOCAL_RANK", std::to_string(rank)},
                                                   {"WORLD_SIZE", std::to_string(procs)},
                                                   {"LOCAL_WORLD_SIZE", std::to_string(procs)},
                                                   {"MASTER_ADDR", "127.0.0.1"},
                                                   {"MASTER_PORT", std::to_string(store->port())},
                                                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                                   {kResultVariable, scratch.file(resultFile(rank))}};
    const std::vector<int> share = cpuShare(cpus, rank, procs);
    if (!share.empty()) environment[kCpusVariable] = formatCpuList(share);
    return environment;
  };
  LocalWorldRun run;
  run.outcome = launchRanks(launch, stop);
  for (int rank = 0; rank < procs; ++rank) {
    const std::string path = scratch.file(resultFile(rank));
    run.results.push_back(std::filesystem::exists(path) ? std::optional<nlohmann::json>(readJsonFile(path)) : std::nullopt);
  }
  if (!run.succeeded()) run.publishedFailure = store->publishedFailure();
  return run;
}

std::string rankResultPath() {
  const char* path = std::getenv(kResultVariable);
  return path != nullptr ? path : "";
}

std::vector<int> bindToRankCpus(CpuBinding binding, const RankEnvironment& environment) {
  std::vector<int> cpus;
  if (const char* given = std::getenv(kCpusVariable)) {
    cpus = parseCpuList(given);
  } else if (binding == CpuBinding::Cores) {
    if (environment.localWorldSize < 1) {
      throw UsageError("--cpu-bind cores splits this host's CPUs among its LOCAL_WORLD_SIZE ranks, which is not set "
                       "(torchrun sets it): set it, or leave --cpu-bind out");
    }
    cpus = cpuShare(allowedCpus(), environment.localRank, environment.localWorldSize);
  }
  if (!cpus.empty()) bindToCpus(cpus);
  return cpus;
}

}  // namespace pipeprof::cli
