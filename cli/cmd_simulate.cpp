// `pipeprof simulate`: predict one candidate's step time, throughput, bubble and memory from a profile.
#include "cluster_options.h"
#include "commands.h"
#include "output_file.h"
#include "schedule_options.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/units.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include <fmt/core.h>

#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace pipeprof::cli {
namespace {

struct SimulateFlags {
  ClusterFlags cluster;
  std::int64_t batch = 0;
  CandidateFlags candidate;
  std::string tracePath;
  bool json = false;
};

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

void printSummary(const Candidate& candidate, const Cluster& cluster, const SimulationResult& result,
                  const std::vector<Bytes>& devicePeaks) {
  const Prediction& p = result.prediction;
  const MicroBatching split = microBatching(candidate.batch, candidate.chunks);
  std::cout << fmt::format("candidate    {} (batch {}, {} micro-batches of up to {} samples)\n", candidate.label(),
                           candidate.batch, split.count, split.chunkSize);
  std::cout << fmt::format("schedule     {} ({} stage{} on {} device{})\n", candidate.orderLabel(),
                           candidate.balance.size(), candidate.balance.size() == 1 ? "" : "s",
                           candidate.pipelineDevices(), candidate.pipelineDevices() == 1 ? "" : "s");
  std::cout << fmt::format("step time    {}\n", formatDuration(p.iterationNs));
  std::cout << fmt::format("throughput   {:.1f} samples/s\n", p.samplesPerS);
  std::cout << fmt::format("bubble       {}\n\n", percent(p.bubbleFraction));
  // One row per pipeline device d (busy time and peak are per pipeline device): the stages it
  // holds (d, d + p, ... or zbv's V) and the cluster device it runs on.
  std::cout << fmt::format("{:<10} {:<12} {:<12} {:>10} {:>7} {:>11}  {}\n", "device", "stages", "on", "busy", "busy%",
                           "peak", "peak at");
  for (std::size_t d = 0; d < p.busyNs.size(); ++d) {
    const double busy = p.iterationNs > 0 ? static_cast<double>(p.busyNs[d]) / static_cast<double>(p.iterationNs) : 0.0;
    std::optional<std::size_t> device;  // the cluster device of d's stages
    std::string stages;
    for (std::int64_t j = 0; j < static_cast<std::int64_t>(candidate.balance.size()); ++j) {
      if (candidate.deviceOfStage(j) != static_cast<std::int64_t>(d)) continue;
      stages += (stages.empty() ? "" : ",") + std::to_string(j);
      device = static_cast<std::size_t>(candidate.deviceOf(j));
    }
    std::cout << fmt::format("{:<10} {:<12} {:<12} {:>10} {:>7} {:>11}  {}\n", d, stages,
                             device ? cluster.devices[*device].name : std::string("-"), formatDuration(p.busyNs[d]),
                             percent(busy), d < p.peakBytes.size() ? formatBytes(p.peakBytes[d]) : std::string("-"),
                             d >= p.peakOp.size() || p.peakOp[d].empty() ? "-" : p.peakOp[d]);
  }
  std::cout << "\n";
  for (std::size_t d = 0; d < p.latePeakBytes.size() && d < p.peakBytes.size(); ++d) {
    if (p.latePeakBytes[d] <= p.peakBytes[d]) continue;
    std::cout << fmt::format("late frees   device {} peaks at up to {} where another device frees its tensors late (a "
                             "long run's unluckiest step)\n",
                             d, formatBytes(p.latePeakBytes[d]));
  }
  if (p.fits) {
    std::cout << "fits         yes\n";
  } else {
    std::cout << "fits         NO: " << rejectionReason(cluster, devicePeaks) << "\n";
  }
  if (!p.tracePath.empty()) std::cout << "trace        " << p.tracePath << "\n";
}

void runSimulate(const SimulateFlags& flags) {
  if (!flags.tracePath.empty()) checkOutputFile("--trace", flags.tracePath);
  if (flags.batch < 1) throw UsageError("--batch " + std::to_string(flags.batch) + ": give a positive mini-batch size");
  const Candidate candidate = candidateFromFlags(flags.candidate, flags.batch);
  // p pipeline devices: the balance's n = p * v stages over v.
  const std::int64_t devices = candidate.pipelineDevices();

  const Predictor predictor = predictorFromFlags(flags.cluster, loadProfileFromFlags(flags.cluster),
                                                 buildClusterFromFlags(flags.cluster, devices));
  const Cluster& cluster = predictor.cluster();
  SimulationOptions options;
  options.recordTrace = !flags.tracePath.empty();
  SimulationResult result = predictor.predict(candidate, options);
  if (!flags.tracePath.empty()) {
    writeChromeTraceFile(result.trace, flags.tracePath);
    result.prediction.tracePath = flags.tracePath;
  }
  const std::vector<Bytes> devicePeaks = clusterPeakBytes(candidate, result.prediction, cluster.deviceCount());

  if (flags.json) {
    nlohmann::json json = toJson(result.prediction);
    json["candidate"] = toJson(candidate);
    json["label"] = candidate.label();
    json["schedule"] = scheduleKindName(candidate.schedule);
    json["stages_per_device"] = candidate.stagesPerDevice;
    json["rejection"] = rejectionReason(cluster, devicePeaks);
    json["simulated_events"] = result.eventCount;
    json["calibration"] = describeCalibration(predictor.calibration());
    std::cout << json.dump(2) << "\n";
    return;
  }
  printSummary(candidate, cluster, result, devicePeaks);
  std::cout << describeCalibration(predictor.calibration()) << "\n";
}

}  // namespace

void addSimulateCommand(CLI::App& app) {
  auto [command, flags] = addCommand<SimulateFlags>(
      app, "simulate",
      {"Predict one candidate (schedule, balance, chunks, checkpoint) from a layer profile (and a calibration):\n"
       "step time, throughput, bubble, per-device busy time and peak memory (and, where devices free each other's\n"
       "tensors, the peak of a long run's unluckiest step, with those frees late).",
       {"pipeprof simulate --profile profile.json --devices 3 --batch 32 --balance 2,3,3 --chunks 8",
        "pipeprof simulate --profile profile.json --cluster cluster.json --batch 64 --balance 4,4 \\\n"
        "      --chunks 16 --checkpoint never --trace predicted.json",
        "pipeprof simulate --profile profile.json --devices 4 --device-memory 16GiB --link-bandwidth 25GB/s \\\n"
        "      --link-latency 5us --batch 32 --balance 2,2,2,2 --chunks 8 --json",
        "pipeprof simulate --profile profile.json --batch 32 --balance 2,3,3 --chunks 8 --schedule 1f1b",
        "pipeprof simulate --profile profile.json --calibration calibration.json --devices 2 --batch 64 \\\n"
        "      --balance 7,8 --chunks 4      # the same step time as a sweep's report, before its drift",
        "pipeprof simulate --profile profile.json --batch 32 --balance 1,1,2,2,1,1 --chunks 6 \\\n"
        "      --schedule interleaved --stages-per-device 2      # 6 stages on 3 devices"}},
      runSimulate);
  addClusterFlags(command, flags.cluster);
  command.add_option("--batch", flags.batch, "Mini-batch size in samples")->required()->type_name("B");
  addCandidateFlags(
      command, flags.candidate,
      "Layers per stage, e.g. 2,3,3; devices x stages-per-device entries, stage j on device j mod devices");
  command.add_option("--trace", flags.tracePath, "Write the predicted timeline (Chrome trace JSON)")->type_name("FILE");
  command.add_flag("--json", flags.json, "Print one JSON object instead of the summary");
}

}  // namespace pipeprof::cli
