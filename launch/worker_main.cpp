// pipeprof-rank: runs one rank of a job file (pipeprof.rank-job/v1) as the rank its environment names.
//
//   RANK=r WORLD_SIZE=N MASTER_ADDR=... MASTER_PORT=... pipeprof-rank --job job.json
//
// A launcher (launchLocalRun, `pipeprof run --procs`) starts it once per rank; torchrun can too.
// Exit codes: 0 done, 1 the job failed (its error is in the rank's result file when the job
// names a result directory, else on stderr), 2 a bad command line, job file or environment.
#include <pipeprof/core/json_file.h>
#include <pipeprof/launch/rank_job.h>
#include <pipeprof/launch/run_rank_job.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/rank_environment.h>
#include <pipeprof/runtime/torch_environment.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "usage: pipeprof-rank --job FILE\n"
    "Runs one rank of the job in FILE (pipeprof.rank-job/v1) as the rank that RANK, WORLD_SIZE,\n"
    "MASTER_ADDR and MASTER_PORT name (set by the launcher: pipeprof run --procs, or torchrun).\n";

}  // namespace

int main(int argc, char** argv) {
  namespace launch = pipeprof::launch;
  pipeprof::keepFreedHostMemory();  // as the pipeprof executable does: ranks allocate as a threaded run
  pipeprof::keepBlasOnOneThread();  // and their intra-op threads are LibTorch's alone
  pipeprof::installMemoryTracker();
  if (argc == 2 && std::string(argv[1]) == "--help") {
    std::cout << kUsage;
    return 0;
  }
  if (argc != 3 || std::string(argv[1]) != "--job") {
    std::cerr << kUsage;
    return kExitUsage;
  }
  launch::RankJob job;
  std::optional<pipeprof::RankEnvironment> environment;
  try {
    job = launch::readRankJob(argv[2]);
    environment = pipeprof::rankEnvironmentFromProcess();
    if (!environment) throw std::invalid_argument("RANK and WORLD_SIZE are not set: a launcher starts each rank");
  } catch (const std::exception& error) {
    std::cerr << "pipeprof-rank: error: " << error.what() << "\n";
    return kExitUsage;
  }
  try {
    launch::runRankJob(job, *environment);
    return 0;
  } catch (const std::exception& error) {
    if (job.resultDir.empty()) {
      std::cerr << "pipeprof-rank: rank " << environment->rank << " failed: " << error.what() << "\n";
      return kExitFailed;
    }
    // The launcher reads the result file and prints the error: unless the rank wrote its own
    // (naming the peer to blame), this one says what happened.
    const std::string result = launch::rankResultPath(job.resultDir, environment->rank);
    if (!std::filesystem::exists(result)) {
      pipeprof::writeFileAtomically(result,
                                    nlohmann::json{{"rank", environment->rank}, {"error", error.what()}}.dump());
    }
    return kExitFailed;
  }
}
