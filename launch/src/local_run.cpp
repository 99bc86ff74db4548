// Starting the ranks of a job on this host and putting their results together.
#include <pipeprof/launch/local_run.h>

#include "local_world.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/launch/rank_worker.h>
#include <pipeprof/launch/run_rank_job.h>
#include <pipeprof/runtime/c10d_transport.h>

#include <unistd.h>

#include <algorithm>

namespace pipeprof::launch {
namespace {

/// The world's run, or RunInterrupted / std::runtime_error("<what> failed: ...") when it did
/// not succeed.
LocalWorldRun runOrThrow(const RankJob& job, const LocalRunOptions& options, const ScratchDirectory& scratch,
                         const StopToken& stop, const std::function<std::string(int rank)>& describeRank,
                         const std::string& failurePrefix) {
  const std::string worker = options.worker.empty() ? findRankWorker() : options.worker;
  if (access(worker.c_str(), X_OK) != 0) {
    throw std::runtime_error("the rank worker '" + worker +
                             "' is not an executable file (findRankWorker finds pipeprof-rank)");
  }
  LocalWorldRun run = runLocalWorld(worker, job, options.procs, scratch, options.cpuBinding, stop);
  if (run.outcome.interrupted) throw RunInterrupted("interrupted: every rank was stopped");
  if (!run.succeeded()) throw std::runtime_error(failurePrefix + run.failure(describeRank));
  return run;
}

}  // namespace

LocalRun launchLocalRun(const RankJob& given, const LocalRunOptions& options, const StopToken& stop) {
  if (given.kind != RankJobKind::Train) throw std::invalid_argument("launchLocalRun runs a Train job");
  const int procs = options.procs;
  if (procs != static_cast<int>(given.devices.size())) {
    throw std::invalid_argument(std::to_string(procs) + " processes but the job names " +
                                std::to_string(given.devices.size()) +
                                " pipeline devices: one process runs each device");
  }
  const ScratchDirectory scratch;
  RankJob job = given;
  if (job.model.threads == 0) {
    job.model.threads = std::max<std::int64_t>(1, static_cast<std::int64_t>(allowedCpus().size()) / procs);
  }
  const bool traced = !given.tracePath.empty();
  if (traced) job.tracePath = scratch.file("trace.json");
  const LocalWorldRun run = runOrThrow(
      job, options, scratch, stop, [&](int rank) { return rankWithStagesText(rank, job.candidate); }, "");

  LocalRun launched;
  Measurement& m = launched.measurement;
  m.warmupSteps = job.warmupSteps;
  m.stepNs.assign(static_cast<std::size_t>(job.steps), 0);
  // A step's CPU wait is every rank's: the machine's other work may take any rank's core.
  m.stepCpuWaitNs.assign(m.stepNs.size(), 0);
  bool waitsKnown = true;
  std::vector<std::string> hosts;
  for (const auto& result : run.results) {
    const auto stepNs = result->at("step_ns").get<std::vector<TimeNs>>();
    for (std::size_t s = 0; s < stepNs.size() && s < m.stepNs.size(); ++s)
      m.stepNs[s] = std::max(m.stepNs[s], stepNs[s]);
    const auto waitNs = result->value("step_cpu_wait_ns", std::vector<TimeNs>{});
    waitsKnown = waitsKnown && waitNs.size() == m.stepNs.size();
    for (std::size_t s = 0; s < waitNs.size() && s < m.stepCpuWaitNs.size(); ++s) m.stepCpuWaitNs[s] += waitNs[s];
    m.peakBytes.push_back(result->at("peak_bytes").get<Bytes>());
    const auto rankLosses = result->at("losses").get<std::vector<double>>();
    if (!rankLosses.empty()) launched.losses = rankLosses;
    hosts.push_back(result->at("host").get<std::string>());
    launched.ranks.push_back(*result);
    launched.clockUncertaintyNs =
        std::max(launched.clockUncertaintyNs, result->at("clock_uncertainty_ns").get<TimeNs>());
  }
  if (!waitsKnown) m.stepCpuWaitNs.clear();
  m.updateStatistics(job.candidate.batch);
  if (traced) {
    std::vector<Trace> rankTraces;
    for (int rank = 0; rank < procs; ++rank)
      rankTraces.push_back(readChromeTraceFile(rankTracePath(job.tracePath, rank)));
    launched.trace = concatenateTraces(rankTraces);
    launched.trace.metadata = {{"source", "measured"},
                               {"model", job.model.name},
                               {"candidate", job.candidate.label()},
                               {"process_layout", std::to_string(procs) + " processes"}};
  }
  launched.transport = c10dBackendName(job.devices.front().typeName());
  launched.layout = {{"procs", procs}, {"transport", launched.transport}, {"hosts", hosts}};
  return launched;
}

LinkMeasurement measureLocalLink(const RankJob& job, const LocalRunOptions& options, const StopToken& stop) {
  if (job.kind != RankJobKind::LinkBenchmark) throw std::invalid_argument("measureLocalLink runs a LinkBenchmark job");
  if (options.procs < 2) {
    throw std::invalid_argument("measuring a link needs at least 2 processes, got " + std::to_string(options.procs));
  }
  const ScratchDirectory scratch;
  const LocalWorldRun run = runOrThrow(
      job, options, scratch, stop, [](int rank) { return "rank " + std::to_string(rank); },
      "measuring the link failed: ");
  return linkMeasurementFromJson(*run.results.front());
}

}  // namespace pipeprof::launch
