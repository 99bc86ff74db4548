// Starting the ranks of a job on this host and putting their results together.
//
//   launcher (this process)                         ranks (pipeprof-rank --job job.json)
//   writes job.json (rank r's CPUs, result dir)
//   hosts the rendezvous store on 127.0.0.1  <----  RANK=r WORLD_SIZE=N MASTER_PORT=... join it
//   polls the ranks and the StopToken               run the job (run_rank_job.h), write
//   reads rank<r>.json, merges the traces   <-----  rank<r>.json and their traces
#pragma once

#include <pipeprof/core/report.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/launch/rank_job.h>
#include <pipeprof/runtime/link_benchmark.h>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::launch {

/// How the ranks of a local world start.
struct LocalRunOptions {
  int procs = 2;  ///< ranks to start; a Train job needs one per pipeline device
  /// Cores: rank r gets its block of this process's CPUs (cpuShare; none when there are fewer
  /// CPUs than ranks). None: the scheduler places them.
  CpuBinding cpuBinding = CpuBinding::Cores;
  /// The pipeprof-rank executable; empty: findRankWorker() as the launch library was built. A
  /// program built against an installed pipeprof passes findRankWorker() from its own code.
  std::string worker;
};

/// The ranks were stopped on request (the StopToken) or by Ctrl-C (a rank killed by SIGINT):
/// not a failure of the job.
class RunInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What the ranks of a Train job measured, put together.
struct LocalRun {
  Measurement measurement;                         ///< the pipeline's steps (each the slowest rank's), peaks by rank
  std::vector<double> losses;                      ///< the last stage's rank's, warm-up steps first
  nlohmann::json ranks = nlohmann::json::array();  ///< every rank's own figures (runRankJob)
  nlohmann::json layout;                           ///< {"procs", "transport", "hosts"}
  std::string transport;                           ///< "gloo" or "nccl"
  Trace trace;                                     ///< traced: every rank's, on rank 0's clock, one process per rank
  TimeNs clockUncertaintyNs = 0;                   ///< the largest of the ranks' clock alignments
};

/// Starts options.procs ranks of options.worker on this host running the Train `job` and
/// waits for them: the rendezvous store hosted here on 127.0.0.1, torchrun's variables set per
/// rank, each rank's CPUs and result file in the job (its rankCpus and resultDir, and its
/// tracePath, are the launcher's; job.tracePath non-empty only asks for the trace, which comes
/// back merged in LocalRun::trace). job.model.threads 0 gives each rank max(1, CPUs / procs)
/// intra-op threads. A failed rank stops the others after job.timeout and five seconds more
/// (SIGTERM, then SIGKILL); every rank dies with this process; none is left behind when this
/// returns or throws. Installs no signal handler: `stop` (or a rank killed by SIGINT) stops
/// every rank at once and throws RunInterrupted. Throws std::invalid_argument when procs differs
/// from the job's devices, std::runtime_error naming the failed rank when the run fails, and
/// when no worker can be found.
LocalRun launchLocalRun(const RankJob& job, const LocalRunOptions& options, const StopToken& stop = {});

/// Runs the LinkBenchmark `job` on options.procs (at least 2) local ranks as launchLocalRun
/// does and returns rank 0's measurement of the link to rank 1 (the transport of
/// job.linkDevice: Gloo on "cpu", NCCL on "cuda"). Throws RunInterrupted when stopped,
/// std::runtime_error naming the rank when the measurement fails.
LinkMeasurement measureLocalLink(const RankJob& job, const LocalRunOptions& options, const StopToken& stop = {});

}  // namespace pipeprof::launch
