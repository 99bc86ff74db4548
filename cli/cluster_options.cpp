// Shared CLI flags for the simulator commands: --profile, --calibration and a cluster (--cluster, or --devices ...).
#include "cluster_options.h"

#include "commands.h"
#include "model_options.h"

#include <pipeprof/core/units.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace pipeprof::cli {
namespace {

template <typename Parse>
auto parseFlag(const std::string& flag, const std::string& value, Parse parse) {
  try {
    return parse(value);
  } catch (const std::invalid_argument& error) {
    throw UsageError(flag + " " + value + ": " + error.what());
  }
}

}  // namespace

void addClusterFlags(CLI::App& command, ClusterFlags& flags) {
  command.add_option("--profile", flags.profilePath, "Layer profile (pipeprof.profile/v1 JSON)")
      ->required()
      ->type_name("FILE");
  command.add_option("--calibration", flags.calibrationPath,
                     "Calibration (pipeprof.calibration/v1 JSON, from `pipeprof calibrate` or a sweep's report): the "
                     "corrections a real pipeline measured (default: predict from the raw profile)")
      ->type_name("FILE");
  auto* cluster = command.add_option("--cluster", flags.clusterPath,
                                     "Cluster description (pipeprof.cluster/v1 JSON): devices, memory, links")
                      ->type_name("FILE");
  auto* devices = command.add_option("--devices", flags.devices,
                                     "Number of identical devices (default: one per pipeline device)")
                      ->type_name("N")
                      ->check(atLeastOne("one device per pipeline device"));
  auto* memory = command.add_option("--device-memory", flags.deviceMemory,
                                    "Memory of each device, e.g. 16GiB (default: unbounded)")
                     ->type_name("SIZE");
  auto* bandwidth = command.add_option("--link-bandwidth", flags.linkBandwidth,
                                       "Bandwidth of every link, e.g. 25GB/s (default: infinite)")
                        ->type_name("RATE");
  auto* latency = command.add_option("--link-latency", flags.linkLatency,
                                     "Latency of every link, e.g. 5us (default: 0)")
                      ->type_name("TIME");
  auto* speed = command.add_option("--device-speed", flags.deviceSpeed,
                                   "Speed of each device relative to the profiled one (default: 1.0)")
                    ->type_name("X");
  for (CLI::Option* option : {devices, memory, bandwidth, latency, speed}) option->excludes(cluster);
}

Profile loadProfileFromFlags(const ClusterFlags& flags) { return readProfile(flags.profilePath); }

Predictor predictorFromFlags(const ClusterFlags& flags, Profile profile, Cluster cluster) {
  Calibration calibration;
  if (!flags.calibrationPath.empty()) {
    calibration = readCalibration(flags.calibrationPath);
    const std::string& measuredFor = calibration.provenance.model;
    const std::string& profiled = profile.environment.model;
    if (!measuredFor.empty() && !profiled.empty() && measuredFor != profiled) {
      throw UsageError("--calibration " + flags.calibrationPath + " was measured for model '" + measuredFor +
                       "' but --profile " + flags.profilePath + " profiles '" + profiled +
                       "'; calibrate against this profile (pipeprof calibrate --profile " + flags.profilePath + ")");
    }
  }
  return Predictor(std::move(profile), std::move(cluster), std::move(calibration));
}

Cluster buildClusterFromFlags(const ClusterFlags& flags, std::int64_t defaultDevices) {
  if (!flags.clusterPath.empty()) return readCluster(flags.clusterPath);
  const std::int64_t count = flags.devices != 0 ? flags.devices : defaultDevices;
  if (count < 1) {
    throw UsageError("--devices " + std::to_string(flags.devices) + ": give a positive number of devices");
  }
  std::optional<Bytes> memory;
  if (!flags.deviceMemory.empty()) {
    memory = parseFlag("--device-memory", flags.deviceMemory, [](const std::string& text) { return parseBytes(text); });
    if (*memory <= 0) throw UsageError("--device-memory " + flags.deviceMemory + ": give a positive size, e.g. 16GiB");
  }
  BytesPerS bandwidth = 0.0;
  if (!flags.linkBandwidth.empty()) {
    bandwidth = parseFlag("--link-bandwidth", flags.linkBandwidth,
                          [](const std::string& text) { return parseBandwidth(text); });
    if (!(bandwidth > 0.0)) {
      throw UsageError("--link-bandwidth " + flags.linkBandwidth + ": give a positive rate, e.g. 25GB/s");
    }
  }
  TimeNs latency = 0;
  if (!flags.linkLatency.empty()) {
    latency = parseFlag("--link-latency", flags.linkLatency, [](const std::string& text) { return parseDuration(text); });
    if (latency < 0) throw UsageError("--link-latency " + flags.linkLatency + ": give a non-negative time, e.g. 5us");
  }
  if (!(flags.deviceSpeed > 0.0)) {
    throw UsageError("--device-speed " + std::to_string(flags.deviceSpeed) + ": give a positive factor, e.g. 1.0");
  }
  Cluster cluster = Cluster::uniform(count, memory, bandwidth, latency, "device");
  for (DeviceSpec& device : cluster.devices) device.relativeSpeed = flags.deviceSpeed;
  return cluster;
}

}  // namespace pipeprof::cli
