// Shared CLI flags for the simulator commands: --profile, --calibration and a cluster (--cluster, or --devices ...).
#include "cluster_options.h"

#include "commands.h"
#include "model_options.h"

#include <pipeprof/core/units.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

namespace pipeprof::cli {
namespace {

/// Parses `text`, the value of `flag`; a std::invalid_argument becomes "<flag> <text>: <why>".
template <typename Parse>
auto parseFlag(const std::string& flag, const std::string& text, Parse parse) {
  try {
    return parse(text);
  } catch (const std::invalid_argument& error) {
    throw UsageError(flag + " " + text + ": " + error.what());
  }
}

/// parseFlag, and the value must be positive: else "<flag> <text>: <fix>".
template <typename Parse>
auto parsePositiveFlag(const std::string& flag, const std::string& text, Parse parse, const std::string& fix) {
  const auto value = parseFlag(flag, text, parse);
  if (!(value > 0)) throw UsageError(flag + " " + text + ": " + fix);
  return value;
}

}  // namespace

void addClusterFlags(CLI::App& command, ClusterFlags& flags) {
  command.add_option("--profile", flags.profilePath, "Layer profile (pipeprof.profile/v1 JSON)")
      ->required()
      ->type_name("FILE");
  command
      .add_option("--calibration", flags.calibrationPath,
                  "Calibration (pipeprof.calibration/v1 JSON from `pipeprof calibrate`, or a sweep's report: the "
                  "calibration it predicted with): the corrections a real pipeline measured (default: predict "
                  "from the raw profile)")
      ->type_name("FILE");
  CLI::Option* cluster = command
                             .add_option("--cluster", flags.clusterPath,
                                         "Cluster description (pipeprof.cluster/v1 JSON): devices, "
                                         "memory, links")
                             ->type_name("FILE");
  // The shorthand for a cluster of identical devices and links (instead of --cluster).
  command.add_option("--devices", flags.devices, "Number of identical devices (default: one per pipeline device)")
      ->type_name("N")
      ->check(atLeastOne("one device per pipeline device"))
      ->excludes(cluster);
  // Quantities with units: text until buildClusterFromFlags parses them.
  const std::tuple<const char*, std::string*, const char*, const char*> quantities[] = {
      {"--device-memory", &flags.deviceMemory, "SIZE", "Memory of each device, e.g. 16GiB (default: unbounded)"},
      {"--link-bandwidth", &flags.linkBandwidth, "RATE", "Bandwidth of every link, e.g. 25GB/s (default: infinite)"},
      {"--link-latency", &flags.linkLatency, "TIME", "Latency of every link, e.g. 5us (default: 0)"}};
  for (const auto& [name, text, type, help] : quantities) {
    command.add_option(name, *text, help)->type_name(type)->excludes(cluster);
  }
  command
      .add_option("--device-speed", flags.deviceSpeed,
                  "Speed of each device relative to the profiled one (default: 1.0)")
      ->type_name("X")
      ->excludes(cluster);
  command
      .add_flag("--process-per-device", flags.processPerDevice,
                "Predict one process per device, as `pipeprof run --procs` runs it: no two devices share a tensor, "
                "a rank keeps what it sent until its last op and posts its receives two ops ahead (a cluster file "
                "says \"process_per_device\": true)")
      ->excludes(cluster);
  command
      .add_option("--optimizer", flags.optimizer,
                  "sgd, momentum, adam or adamw: the optimizer to predict for (default: the profile's; another kind "
                  "when the profile measured its steps too, as `pipeprof profile` does)")
      ->type_name("KIND");
  command
      .add_option("--precision", flags.precision,
                  "fp32, bf16 or fp16: the precision the profile must have been measured in (default: the profile's)")
      ->type_name("TYPE");
}

Profile loadProfileFromFlags(const ClusterFlags& flags) {
  Profile profile = readProfile(flags.profilePath);
  const ProfileEnvironment& measured = profile.environment;
  const std::string again =
      "; profile again with it (pipeprof profile ... --optimizer " +
      (flags.optimizer.empty() ? std::string(optimizerName(measured.optimizer.kind)) : flags.optimizer) +
      " --precision " + (flags.precision.empty() ? std::string(precisionName(measured.precision)) : flags.precision) +
      ")";
  if (!flags.optimizer.empty()) {
    const OptimizerKind kind = parseFlag("--optimizer", flags.optimizer, parseOptimizerKind);
    if (!profile.predictsOptimizer(kind)) {
      throw UsageError("--optimizer " + flags.optimizer + ": --profile " + flags.profilePath + " was measured with " +
                       describeOptimizer(measured.optimizer) + " and has no " + flags.optimizer + " steps" + again);
    }
    if (kind != measured.optimizer.kind) {
      const OptimizerSpec spec = measured.optimizer.asKind(kind);  // read before the profile moves
      profile = withOptimizer(std::move(profile), spec);
    }
  }
  if (!flags.precision.empty()) {
    const Precision precision = parseFlag("--precision", flags.precision, parsePrecision);
    if (precision != measured.precision) {
      throw UsageError("--precision " + flags.precision + ": --profile " + flags.profilePath + " was measured in " +
                       std::string(precisionName(measured.precision)) + again);
    }
  }
  return profile;
}

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
    memory = parsePositiveFlag("--device-memory", flags.deviceMemory, parseBytes, "give a positive size, e.g. 16GiB");
  }
  const BytesPerS bandwidth = flags.linkBandwidth.empty()
                                  ? 0.0
                                  : parsePositiveFlag("--link-bandwidth", flags.linkBandwidth, parseBandwidth,
                                                      "give a positive rate, e.g. 25GB/s");
  // parseDuration refuses negative times.
  const TimeNs latency = flags.linkLatency.empty() ? 0 : parseFlag("--link-latency", flags.linkLatency, parseDuration);
  if (!(flags.deviceSpeed > 0.0)) {
    throw UsageError("--device-speed " + std::to_string(flags.deviceSpeed) + ": give a positive factor, e.g. 1.0");
  }
  Cluster cluster = Cluster::uniform(count, memory, bandwidth, latency, "device");
  for (DeviceSpec& device : cluster.devices) device.relativeSpeed = flags.deviceSpeed;
  cluster.processPerDevice = flags.processPerDevice;
  return cluster;
}

}  // namespace pipeprof::cli
