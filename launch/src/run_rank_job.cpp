// A rank's side: runs a RankJob as the rank its environment names (the body of pipeprof-rank).
#include <pipeprof/launch/run_rank_job.h>

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/runtime/c10d_transport.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/torch_environment.h>

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

namespace pipeprof::launch {

TrainingOptions trainingOptions(const RankJob& job) {
  TrainingOptions options;
  static_cast<PipelineShape&>(options) = job.candidate;
  options.devices = torchDevices(job.devices);
  options.batch = job.candidate.batch;
  options.steps = job.steps;
  options.warmupSteps = job.warmupSteps;
  options.optimizer = job.optimizer;
  options.precision = job.precision;
  options.captureTrace = !job.tracePath.empty();
  options.cuptiMode = job.cuptiMode;
  return options;
}

namespace {

/// Binds this process as the job says for `rank`; returns the CPUs (empty: not bound).
std::vector<int> bindRankCpus(const RankJob& job, const RankEnvironment& environment) {
  std::vector<int> cpus;
  if (!job.rankCpus.empty()) {
    if (static_cast<std::size_t>(environment.rank) < job.rankCpus.size()) {
      cpus = job.rankCpus[static_cast<std::size_t>(environment.rank)];
    }
  } else if (job.cpuBinding == CpuBinding::Cores) {
    if (environment.localWorldSize < 1) {
      throw std::invalid_argument("binding to cores splits this host's CPUs among its LOCAL_WORLD_SIZE ranks, which "
                                  "is not set (torchrun sets it): set it, or do not bind");
    }
    cpus = cpuShare(allowedCpus(), environment.localRank, environment.localWorldSize);
  }
  if (!cpus.empty()) bindToCpus(cpus);
  return cpus;
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
std::string describeRankFailure(const std::exception& error, int rank, const std::string& device, const RankJob& job) {
  const std::string self = rankLabel(rank, device) + " (" + rankStagesText(rank, job.candidate) + ")";
  const std::optional<TransportError> transport = findTransportError(error);
  if (!transport || transport->peer() < 0) return self + " failed: " + errorText(error);
  const std::string peer = rankWithStagesText(transport->peer(), job.candidate);
  const std::string what =
      transport->timedOut() ? fmt::format(" sent nothing for {} s", static_cast<double>(job.timeout.count()) / 1000.0)
                            : std::string(" is gone");
  return peer + what + ": " + self + " stopped: " + errorText(error);
}

nlohmann::json toJson(const RankTrainingResult& result) {
  nlohmann::json json = {{"rank", result.rank},
                         {"host", hostName()},
                         {"device", result.device},
                         {"stages", result.stages},
                         {"step_ns", result.stepNs},
                         {"step_cpu_wait_ns", result.stepCpuWaitNs},
                         {"peak_bytes", result.peakBytes},
                         {"sent_bytes", result.transfers.sentBytes},
                         {"received_bytes", result.transfers.receivedBytes},
                         {"messages_sent", result.transfers.messagesSent},
                         {"messages_received", result.transfers.messagesReceived},
                         {"losses", result.losses},
                         {"clock_offset_ns", result.clock.offsetNs},
                         {"clock_uncertainty_ns", result.clock.uncertaintyNs}};
  if (!result.collectorNote.empty()) json["collector_note"] = result.collectorNote;
  return json;
}

void writeResult(const RankJob& job, int rank, const nlohmann::json& result) {
  if (!job.resultDir.empty()) writeFileAtomically(rankResultPath(job.resultDir, rank), result.dump());
}

nlohmann::json train(const RankJob& job, const RankEnvironment& environment) {
  const int rank = environment.rank;
  if (environment.worldSize != static_cast<int>(job.devices.size())) {
    throw std::invalid_argument("WORLD_SIZE is " + std::to_string(environment.worldSize) + " but the job names " +
                                std::to_string(job.devices.size()) + " pipeline devices: run one rank per device");
  }
  Model model = buildModel(job.model);
  const TrainingOptions options = trainingOptions(job);
  const torch::Device device = options.devices.at(static_cast<std::size_t>(rank));
  std::unique_ptr<Transport> transport = connectC10d(environment, device, job.timeout);
  writeResult(job, rank, {{"rank", rank}, {"joined", true}});
  RankTrainingResult result;
  try {
    result = trainRank(model, options, *transport);
  } catch (const std::exception& error) {
    const std::string message = describeRankFailure(error, rank, device.str(), job);
    transport->publishFailure(message);
    writeResult(job, rank, {{"rank", rank}, {"error", message}});
    throw std::runtime_error(message);
  }
  if (!job.tracePath.empty()) {
    result.trace.metadata["model"] = job.model.name;
    result.trace.metadata["candidate"] = job.candidate.label();
    result.trace.metadata["rank"] = std::to_string(rank);
    writeChromeTraceFile(result.trace, rankTracePath(job.tracePath, rank));
  }
  return toJson(result);
}

nlohmann::json benchmarkLink(const RankJob& job, const RankEnvironment& environment) {
  const torch::Device device = job.linkDevice == "cuda"
                                   ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(environment.localRank))
                                   : torch::Device(torch::kCPU);
  const std::unique_ptr<Transport> link = connectC10d(environment, device, job.timeout);
  writeResult(job, environment.rank, {{"rank", environment.rank}, {"joined", true}});
  const LinkMeasurement measurement = measureLink(*link, defaultLinkSizes(), job.repeats);
  nlohmann::json result = environment.rank == 0 ? launch::toJson(measurement) : nlohmann::json::object();
  result["rank"] = environment.rank;
  return result;
}

}  // namespace

nlohmann::json runRankJob(const RankJob& job, const RankEnvironment& environment) {
  const std::vector<int> cpus = bindRankCpus(job, environment);  // before this rank starts its threads
  nlohmann::json result = job.kind == RankJobKind::Train ? train(job, environment) : benchmarkLink(job, environment);
  result["cpus"] = formatCpuList(cpus);
  writeResult(job, environment.rank, result);
  return result;
}

nlohmann::json toJson(const LinkMeasurement& measurement) {
  nlohmann::json samples = nlohmann::json::array();
  for (const LinkSample& sample : measurement.samples) {
    samples.push_back({{"bytes", sample.bytes}, {"one_way_ns", sample.oneWayNs}});
  }
  return {{"samples", samples},
          {"latency_ns", measurement.link.latencyNs},
          {"bandwidth_bytes_per_s", measurement.link.bandwidthBytesPerS}};
}

LinkMeasurement linkMeasurementFromJson(const nlohmann::json& result) {
  LinkMeasurement measurement;
  for (const nlohmann::json& sample : result.at("samples")) {
    measurement.samples.push_back({sample.at("bytes").get<Bytes>(), sample.at("one_way_ns").get<TimeNs>()});
  }
  measurement.link.latencyNs = result.at("latency_ns").get<TimeNs>();
  measurement.link.bandwidthBytesPerS = result.at("bandwidth_bytes_per_s").get<BytesPerS>();
  return measurement;
}

}  // namespace pipeprof::launch
