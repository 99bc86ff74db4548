// `pipeprof run` with one process per pipeline device: the launcher (--procs N) and a rank's side (torchrun).
#include "commands.h"
#include "interrupts.h"
#include "run_plan.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/statistics.h>
#include <pipeprof/core/units.h>
#include <pipeprof/launch/local_run.h>
#include <pipeprof/launch/rank_worker.h>
#include <pipeprof/launch/run_rank_job.h>
#include <pipeprof/runtime/rank_environment.h>

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace pipeprof::cli {
namespace {

/// "rank 1 (node0, cpu) (stage 1): step 41.2 ms, ..." from a rank's result.
std::string rankLine(const nlohmann::json& rank, const Candidate& candidate, const std::string& figures) {
  const int r = rank.at("rank").get<int>();
  return fmt::format("{} ({}){}", rankLabel(r, rank.at("device").get<std::string>()),
                     launch::rankStagesText(r, candidate), figures);
}

/// A rank's median step (its own clock).
TimeNs medianStepNs(const nlohmann::json& rank) { return medianNs(rank.at("step_ns").get<std::vector<TimeNs>>()); }

}  // namespace

void runAsRank(const RunFlags& flags) {
  const RankEnvironment environment = *rankEnvironmentFromProcess();
  if (flags.cpuBind == "cores" && environment.localWorldSize < 1) {
    throw UsageError("--cpu-bind cores splits this host's CPUs among its LOCAL_WORLD_SIZE ranks, which is not set "
                     "(torchrun sets it): set it, or leave --cpu-bind out");
  }
  const RunPlan plan = planRun(flags, std::cerr, /*balanceAutoAllowed=*/false);
  if (environment.worldSize != static_cast<int>(plan.job.devices.size())) {
    throw UsageError("WORLD_SIZE is " + std::to_string(environment.worldSize) + " but --devices " + flags.devices +
                     " names " + std::to_string(plan.job.devices.size()) +
                     " pipeline devices: run one rank per device");
  }
  const nlohmann::json result = launch::runRankJob(plan.job, environment);
  if (flags.json) {
    std::cout << result.dump() << "\n";
    return;
  }
  std::cout << rankLine(result, plan.job.candidate,
                        fmt::format(": step time median {} (this rank), peak {}, sent {}, received {}\n",
                                    formatDuration(medianStepNs(result)),
                                    formatBytes(result.at("peak_bytes").get<Bytes>()),
                                    formatBytes(result.at("sent_bytes").get<Bytes>()),
                                    formatBytes(result.at("received_bytes").get<Bytes>())));
  const auto losses = result.at("losses").get<std::vector<double>>();
  if (!losses.empty()) {
    std::cout << fmt::format("loss: {:.6g} at the first step, {:.6g} at the last\n", losses.front(), losses.back());
  }
}

void runLaunchedRanks(const RunFlags& flags) {
  std::ostream& log = flags.json ? std::cerr : std::cout;
  const RunPlan plan = planRun(flags, log, /*balanceAutoAllowed=*/true);
  checkProcsFlag(flags.procs, flags.devices, plan.job.devices.size());
  launch::LocalRunOptions options;
  options.procs = flags.procs;
  options.cpuBinding = flags.cpuBind == "none" ? launch::CpuBinding::None : launch::CpuBinding::Cores;
  options.worker = launch::findRankWorker();
  launch::LocalRun launched;
  try {
    launched = launch::launchLocalRun(plan.job, options, interruptToken());
  } catch (const launch::RunInterrupted&) {
    throw Interrupted("interrupted: every rank was stopped, nothing was written");
  }
  Measurement& m = launched.measurement;
  if (!flags.tracePath.empty()) {
    writeChromeTraceFile(launched.trace, flags.tracePath);
    m.tracePath = flags.tracePath;
  }
  printRun(flags, plan, m, launched.losses, {{"process_layout", launched.layout}, {"ranks", launched.ranks}},
           std::cout);
  if (flags.json) return;
  for (const auto& rank : launched.ranks) {
    const std::string cpus = rank.value("cpus", std::string());
    std::cout << "  "
              << rankLine(rank, plan.job.candidate,
                          fmt::format(": step {}, sent {} in {} messages, received {}{}\n",
                                      formatDuration(medianStepNs(rank)),
                                      formatBytes(rank.at("sent_bytes").get<Bytes>()),
                                      rank.at("messages_sent").get<std::int64_t>(),
                                      formatBytes(rank.at("received_bytes").get<Bytes>()),
                                      cpus.empty() ? std::string() : ", on CPU " + cpus));
    const std::string collectorNote = rank.value("collector_note", std::string());
    if (!collectorNote.empty()) std::cout << "    " << collectorNote << "\n";
  }
  const bool bound = std::any_of(launched.ranks.begin(), launched.ranks.end(),
                                 [](const nlohmann::json& rank) { return !rank.value("cpus", std::string()).empty(); });
  std::cout << fmt::format("transport: {} over 127.0.0.1, {} processes{}\n", launched.transport, flags.procs,
                           bound || flags.cpuBind == "none" ? "" : " sharing the CPUs (fewer CPUs than ranks)");
  if (!flags.tracePath.empty()) {
    std::cout << fmt::format("trace: {} (one process per rank; clocks aligned within {})\n", flags.tracePath,
                             formatDuration(launched.clockUncertaintyNs));
  }
}

}  // namespace pipeprof::cli
