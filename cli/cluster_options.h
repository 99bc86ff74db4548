// Shared CLI flags for the simulator commands: --profile, --calibration and a cluster (--cluster, or --devices with
// memory, link, speed).
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/simulator/predictor.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace pipeprof::cli {

/// What the profile and cluster flags hold after parsing (text until validated).
struct ClusterFlags {
  std::string profilePath;
  std::string calibrationPath;  ///< empty: predict from the raw profile
  std::string clusterPath;
  std::int64_t devices = 0;   ///< 0: one device per partition
  std::string deviceMemory;   ///< empty: unbounded
  std::string linkBandwidth;  ///< empty: infinitely fast
  std::string linkLatency;    ///< empty: 0
  double deviceSpeed = 1.0;
  bool processPerDevice = false;  ///< --process-per-device: each device a rank (as run --procs)
  /// The training step asked about: empty takes the profile's. The precision must be the
  /// profile's (its times and saved bytes are that precision's); the optimizer may be another
  /// kind whose steps the profile measured (Profile::predictsOptimizer).
  std::string optimizer;
  std::string precision;
};

/// Adds --profile (required), --calibration, --cluster, and the --devices shorthand flags (--device-memory,
/// --link-bandwidth, --link-latency, --device-speed, --process-per-device; they exclude --cluster), and --optimizer and
/// --precision (checked against the profile's) to a subcommand.
void addClusterFlags(CLI::App& command, ClusterFlags& flags);

/// Reads the profile, as for --optimizer when that is another kind the profile can stand for
/// (withOptimizer). FormatError (unreadable or malformed file) propagates; main maps it to exit
/// code 2. Throws UsageError naming --precision when the profile was measured in another, and
/// --optimizer when it cannot stand for that kind.
Profile loadProfileFromFlags(const ClusterFlags& flags);

/// Reads --cluster, or builds the uniform cluster the shorthand flags describe with
/// `defaultDevices` devices when --devices is not given. Throws UsageError naming the flag
/// and the value for a bad size, rate, duration, speed or count; FormatError propagates.
Cluster buildClusterFromFlags(const ClusterFlags& flags, std::int64_t defaultDevices);

/// The Predictor of the profile, the cluster and --calibration (none: the raw profile). Throws
/// FormatError for a malformed calibration and UsageError for one measured for another model
/// than the profile's.
Predictor predictorFromFlags(const ClusterFlags& flags, Profile profile, Cluster cluster);

}  // namespace pipeprof::cli
