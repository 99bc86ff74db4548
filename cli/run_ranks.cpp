// `pipeprof run` with one process per pipeline device: the launcher (--procs N) and a rank's side (torchrun).
#include "commands.h"
#include "cpu_binding.h"
#include "interrupts.h"
#include "local_world.h"
#include "run_plan.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/c10d_transport.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/rank_environment.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/tuner/environment_info.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

namespace pipeprof::cli {
namespace {

std::chrono::milliseconds timeoutOf(const RunFlags& flags) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(flags.timeoutS * 1000.0));
}

/// The stages of rank r: r, r + p, r + 2p, ... of n.
std::string stagesText(int rank, const Candidate& candidate) {
  const std::int64_t p = candidate.pipelineDevices();
  std::string text;
  for (auto j = static_cast<std::int64_t>(rank); j < static_cast<std::int64_t>(candidate.balance.size()); j += p) {
    text += (text.empty() ? "" : ",") + std::to_string(j);
  }
  return (text.find(',') == std::string::npos ? "stage " : "stages ") + text;
}

/// Where rank r writes its trace when the user asked for `path`: "t.json" -> "t.rank1.json".
std::string rankTracePath(const std::string& path, int rank) {
  const std::filesystem::path file(path);
  return (file.parent_path() / (file.stem().string() + ".rank" + std::to_string(rank) + file.extension().string())).string();
}

std::optional<TransportError> findTransportError(const std::exception& error) {
  if (const auto* transport = dynamic_cast<const TransportError*>(&error)) return *transport;
  try {
    std::rethrow_if_nested(error);
  } catch (const std::exception& nested) {
    return findTransportError(nested);
  } catch (...) {
  }
  return std::nullopt;
}

/// What a rank says when its run fails: the rank to blame first, then what this one was doing.
std::string describeRankFailure(const std::exception& error, int rank, const std::string& device, const RunFlags& flags,
                                const Candidate& candidate) {
  const std::string self = rankLabel(rank, device) + " (" + stagesText(rank, candidate) + ")";
  const std::optional<TransportError> transport = findTransportError(error);
  if (!transport || transport->peer() < 0) return self + " failed: " + errorText(error);
  const std::string peer = "rank " + std::to_string(transport->peer()) + " (" + stagesText(transport->peer(), candidate) + ")";
  const std::string what = transport->timedOut() ? " sent nothing for " + fmt::format("{}", flags.timeoutS) + " s"
                                                 : " is gone";
  return peer + what + ": " + self + " stopped: " + errorText(error);
}

nlohmann::json toJson(const RankTrainingResult& result) {
  return {{"rank", result.rank},
          {"host", hostName()},
          {"device", result.device},
          {"stages", result.stages},
          {"step_ns", result.stepNs},
          {"peak_bytes", result.peakBytes},
          {"sent_bytes", result.transfers.sentBytes},
          {"received_bytes", result.transfers.receivedBytes},
          {"messages_sent", result.transfers.messagesSent},
          {"messages_received", result.transfers.messagesReceived},
          {"losses", result.losses},
          {"clock_offset_ns", result.clock.offsetNs},
          {"clock_uncertainty_ns", result.clock.uncertaintyNs}};
}

/// The flags a launched rank runs with: this run's, with the balance resolved.
std::vector<std::string> rankArguments(const RunFlags& flags, const RunPlan& plan, const std::string& tracePath) {
  const Candidate& candidate = plan.candidate;
  const std::int64_t threads =
      flags.model.threads > 0 ? flags.model.threads : std::max<std::int64_t>(1, tuner::hardwareThreads() / flags.procs);
  std::vector<std::string> arguments{"run", "--model", flags.model.model, "--batch", std::to_string(candidate.batch),
                                     "--threads", std::to_string(threads), "--devices", flags.devices, "--balance",
                                     formatBalance(candidate.balance), "--chunks", std::to_string(candidate.chunks),
                                     "--checkpoint", std::string(checkpointName(candidate.checkpoint)), "--schedule",
                                     scheduleKindName(candidate.schedule), "--stages-per-device",
                                     std::to_string(candidate.stagesPerDevice), "--steps", std::to_string(flags.steps),
                                     "--warmup", std::to_string(flags.warmup), "--lr", fmt::format("{}", flags.learningRate),
                                     "--timeout", fmt::format("{}", flags.timeoutS)};
  if (flags.model.width > 0) arguments.insert(arguments.end(), {"--width", std::to_string(flags.model.width)});
  if (flags.model.depth > 0) arguments.insert(arguments.end(), {"--depth", std::to_string(flags.model.depth)});
  if (flags.model.seed != 0) arguments.insert(arguments.end(), {"--seed", std::to_string(flags.model.seed)});
  if (!tracePath.empty()) arguments.insert(arguments.end(), {"--trace", tracePath});
  return arguments;
}

}  // namespace

void runAsRank(const RunFlags& flags) {
  const RankEnvironment environment = *rankEnvironmentFromProcess();
  // Before this rank starts its threads; under torchrun only when asked.
  const std::vector<int> cpus = bindToRankCpus(flags.cpuBind == "cores" ? CpuBinding::Cores : CpuBinding::None, environment);
  const std::string resultPath = rankResultPath();
  RunPlan plan = planRun(flags, std::cerr, /*balanceAutoAllowed=*/false);
  const auto devices = static_cast<int>(plan.devices.size());
  if (environment.worldSize != devices) {
    throw UsageError("WORLD_SIZE is " + std::to_string(environment.worldSize) + " but --devices " + flags.devices +
                     " names " + std::to_string(devices) + " pipeline devices: run one rank per device");
  }
  const torch::Device device = plan.options.devices[static_cast<std::size_t>(environment.rank)];
  std::unique_ptr<Transport> transport = connectC10d(environment, device, timeoutOf(flags));
  RankTrainingResult result;
  try {
    result = trainRank(plan.model, plan.options, *transport);
  } catch (const std::exception& error) {
    const std::string message = describeRankFailure(error, environment.rank, device.str(), flags, plan.candidate);
    transport->publishFailure(message);
    if (resultPath.empty()) throw std::runtime_error(message);
    writeFileAtomically(resultPath, nlohmann::json{{"rank", environment.rank}, {"error", message}}.dump());
    throw ReportedFailure(message);  // the launcher prints it
  }
  if (!flags.tracePath.empty()) {
    result.trace.metadata["model"] = flags.model.model;
    result.trace.metadata["candidate"] = plan.candidate.label();
    result.trace.metadata["rank"] = std::to_string(environment.rank);
    writeChromeTraceFile(result.trace, rankTracePath(flags.tracePath, environment.rank));
  }
  nlohmann::json json = toJson(result);
  json["cpus"] = formatCpuList(cpus);
  if (!resultPath.empty()) {
    writeFileAtomically(resultPath, json.dump());
    return;
  }
  if (flags.json) {
    std::cout << json.dump() << "\n";
    return;
  }
  Measurement m;
  m.stepNs = result.stepNs;
  m.updateStatistics(plan.candidate.batch);
  std::cout << fmt::format("{} ({}): step time median {} (this rank), peak {}, sent {}, received {}\n",
                           rankLabel(environment.rank, result.device), stagesText(environment.rank, plan.candidate),
                           formatDuration(m.stepNsMedian), formatBytes(result.peakBytes),
                           formatBytes(result.transfers.sentBytes), formatBytes(result.transfers.receivedBytes));
  if (!result.losses.empty()) {
    std::cout << fmt::format("loss: {:.6g} at the first step, {:.6g} at the last\n", result.losses.front(),
                             result.losses.back());
  }
}

LaunchedRun launchRun(const RunFlags& flags, const RunPlan& plan, bool traced, const StopToken& stop) {
  const auto devices = static_cast<int>(plan.devices.size());
  if (flags.procs != devices) {
    throw UsageError("--procs " + std::to_string(flags.procs) + " but --devices " + flags.devices + " names " +
                     std::to_string(devices) + " pipeline devices: one process runs each device");
  }
  const ScratchDirectory scratch;
  const LocalWorldRun run = runLocalWorld(rankArguments(flags, plan, traced ? scratch.file("trace.json") : ""),
                                          flags.procs, timeoutOf(flags), scratch,
                                          flags.cpuBind == "none" ? CpuBinding::None : CpuBinding::Cores, stop);
  if (run.outcome.interrupted) throw TrainingStopped("interrupted: every rank was stopped");
  if (!run.succeeded()) {
    throw std::runtime_error(
        run.failure([&](int rank) { return "rank " + std::to_string(rank) + " (" + stagesText(rank, plan.candidate) + ")"; }));
  }
  LaunchedRun launched;
  Measurement& m = launched.measurement;
  m.warmupSteps = flags.warmup;
  m.stepNs.assign(static_cast<std::size_t>(flags.steps), 0);
  std::vector<std::string> hosts;
  for (const auto& result : run.results) {
    const auto stepNs = result->at("step_ns").get<std::vector<TimeNs>>();
    for (std::size_t s = 0; s < stepNs.size() && s < m.stepNs.size(); ++s) m.stepNs[s] = std::max(m.stepNs[s], stepNs[s]);
    m.peakBytes.push_back(result->at("peak_bytes").get<Bytes>());
    const auto rankLosses = result->at("losses").get<std::vector<double>>();
    if (!rankLosses.empty()) launched.losses = rankLosses;
    hosts.push_back(result->at("host").get<std::string>());
    launched.ranks.push_back(*result);
    launched.clockUncertaintyNs = std::max(launched.clockUncertaintyNs, result->at("clock_uncertainty_ns").get<TimeNs>());
  }
  m.updateStatistics(plan.candidate.batch);
  if (traced) {
    std::vector<Trace> rankTraces;
    for (int rank = 0; rank < flags.procs; ++rank) {
      rankTraces.push_back(readChromeTraceFile(rankTracePath(scratch.file("trace.json"), rank)));
    }
    launched.trace = concatenateTraces(rankTraces);
    launched.trace.metadata = {{"source", "measured"}, {"model", flags.model.model}, {"candidate", plan.candidate.label()},
                               {"process_layout", std::to_string(flags.procs) + " processes"}};
  }
  launched.transport = plan.options.devices.front().is_cuda() ? "nccl" : "gloo";
  launched.layout = {{"procs", flags.procs}, {"transport", launched.transport}, {"hosts", hosts}};
  return launched;
}

void runLaunchedRanks(const RunFlags& flags) {
  std::ostream& log = flags.json ? std::cerr : std::cout;
  const RunPlan plan = planRun(flags, log, /*balanceAutoAllowed=*/true);
  LaunchedRun launched;
  try {
    launched = launchRun(flags, plan, !flags.tracePath.empty(), interruptToken());
  } catch (const TrainingStopped&) {
    throw Interrupted("interrupted: every rank was stopped, nothing was written");
  }
  Measurement& m = launched.measurement;
  if (!flags.tracePath.empty()) {
    writeChromeTraceFile(launched.trace, flags.tracePath);
    m.tracePath = flags.tracePath;
  }
  printRun(flags, plan, m, launched.losses, {{"process_layout", launched.layout}, {"ranks", launched.ranks}}, std::cout);
  if (flags.json) return;
  for (const auto& rank : launched.ranks) {
    Measurement own;
    own.stepNs = rank.at("step_ns").get<std::vector<TimeNs>>();
    own.updateStatistics(plan.candidate.batch);
    const std::string cpus = rank.value("cpus", std::string());
    std::cout << fmt::format("  {} ({}): step {}, sent {} in {} messages, received {}{}\n",
                             rankLabel(rank.at("rank").get<int>(), rank.at("device").get<std::string>()),
                             stagesText(rank.at("rank").get<int>(), plan.candidate), formatDuration(own.stepNsMedian),
                             formatBytes(rank.at("sent_bytes").get<Bytes>()), rank.at("messages_sent").get<std::int64_t>(),
                             formatBytes(rank.at("received_bytes").get<Bytes>()),
                             cpus.empty() ? std::string() : ", on CPU " + cpus);
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
