// The sweep's multi-process measurer: each candidate trained by one process per pipeline device.
#include <pipeprof/tuner/process_measurer.h>

#include <pipeprof/launch/local_run.h>
#include <pipeprof/runtime/c10d_transport.h>
#include <pipeprof/runtime/training_loop.h>

#include <stdexcept>

namespace pipeprof::tuner {

ProcessMeasurer::ProcessMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, std::chrono::milliseconds timeout,
                                 TrainingStepOptions step, std::string worker)
    : model_(std::move(model)),
      devices_(std::move(devices)),
      timeout_(timeout),
      step_(std::move(step)),
      worker_(std::move(worker)) {}

MeasuredRun ProcessMeasurer::measure(const Candidate& candidate, const MeasureRequest& request) {
  launch::RankJob job;
  job.model = model_;
  job.candidate = candidate;
  for (std::int64_t d = 0; d < candidate.pipelineDevices(); ++d) {
    job.devices.push_back(devices_.at(static_cast<std::size_t>(candidate.deviceOf(d))));
  }
  job.steps = request.steps;
  job.warmupSteps = request.warmupSteps;
  job.optimizer = step_.optimizer;
  job.precision = step_.precision;
  job.tracePath = request.traced ? "trace.json" : "";  // comes back merged
  job.timeout = timeout_;
  launch::LocalRunOptions options;
  options.procs = static_cast<int>(candidate.pipelineDevices());
  options.worker = worker_;
  if (step_.cpuBinding) options.cpuBinding = *step_.cpuBinding;
  launch::LocalRun launched;
  try {
    launched = launch::launchLocalRun(job, options, request.stop);
  } catch (const launch::RunInterrupted& interrupted) {
    throw TrainingStopped(interrupted.what());  // the sweep's interruption, not a failed candidate
  }
  MeasuredRun run;
  run.measurement = std::move(launched.measurement);
  run.trace = std::move(launched.trace);
  return run;
}

nlohmann::json processLayout(int procs, const std::vector<DeviceDesc>& devices) {
  return {{"procs", procs}, {"transport", c10dBackendName(devices.empty() ? "cpu" : devices.front().typeName())}};
}

Link measureRankLink(SweepConfig& config, std::chrono::milliseconds timeout, const StopToken& stop,
                     const std::string& worker) {
  launch::RankJob job;
  job.kind = launch::RankJobKind::LinkBenchmark;
  job.linkDevice = config.devices.front().typeName();
  job.timeout = timeout;
  launch::LocalRunOptions options;
  options.worker = worker;
  const Link link = launch::measureLocalLink(job, options, stop).link;
  useRankLink(config, link);
  return link;
}

void useRankLink(SweepConfig& config, const Link& link) {
  config.rankLink = link;
  config.processLayout["link"] = {{"latency_ns", link.latencyNs}, {"bandwidth_bytes_per_s", link.bandwidthBytesPerS}};
}

std::optional<Link> recordedRankLink(const nlohmann::json& processLayout) {
  if (!processLayout.is_object() || !processLayout.contains("link")) return std::nullopt;
  const nlohmann::json& json = processLayout.at("link");
  const nlohmann::json* latency = json.is_object() && json.contains("latency_ns") ? &json.at("latency_ns") : nullptr;
  const nlohmann::json* bandwidth =
      json.is_object() && json.contains("bandwidth_bytes_per_s") ? &json.at("bandwidth_bytes_per_s") : nullptr;
  if (latency == nullptr || !latency->is_number_integer() || latency->get<TimeNs>() < 0 || bandwidth == nullptr ||
      !bandwidth->is_number() || !(bandwidth->get<double>() > 0)) {
    throw std::invalid_argument(
        "process_layout.link: expected {\"latency_ns\": ns >= 0, \"bandwidth_bytes_per_s\": > 0}, got " + json.dump());
  }
  return Link{latency->get<TimeNs>(), bandwidth->get<double>()};
}

}  // namespace pipeprof::tuner
