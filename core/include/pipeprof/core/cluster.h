// The cluster (pipeprof.cluster/v1): devices with memory and speed, their hosts, and the links between them.
#pragma once

#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

inline constexpr const char* kClusterSchema = "pipeprof.cluster/v1";

struct DeviceSpec {
  std::string name;                  ///< e.g. "cpu:0", "cuda:1"
  std::optional<Bytes> memoryBytes;  ///< capacity; nullopt means unbounded
  double relativeSpeed = 1.0;        ///< compute time is the profile's time divided by this
};

struct Link {
  TimeNs latencyNs = 0;
  BytesPerS bandwidthBytesPerS = 0.0;  ///< 0 means infinitely fast (no transfer time)

  /// latency + bytes / bandwidth, rounded up to whole nanoseconds; 0 for 0 bytes.
  TimeNs transferNs(Bytes bytes) const;
};

struct Cluster {
  std::vector<DeviceSpec> devices;
  std::vector<std::vector<Link>> links;  ///< links[a][b]: a full matrix, a == b unused
  /// hosts[d]: the host of device d, one non-empty name per device; empty when the cluster names
  /// no hosts. Naming hosts makes the simulator share link bandwidth: transfers between two
  /// hosts share one link per direction (docs/simulator.md, "Links").
  std::vector<std::string> hosts;
  /// One process per pipeline device (`pipeprof run --procs`, one rank each): no two devices
  /// share a tensor, a rank keeps what it sent until its step's ops end and posts its receive
  /// buffers two ops ahead (docs/simulator.md, "Memory model"). false: the devices are
  /// threads of one process, and devices joined by a zero-cost link share tensors.
  bool processPerDevice = false;
  /// How long a pipeline device's worker that sleeps waiting for another device's data takes to
  /// start the op once the data is there (a sleeping thread's wake-up: on a 2-core VM about
  /// 60 us, where a busy worker picks the data up within a few). 0: at once. The calibration
  /// measures it on threads of one process (Calibration::wakeLatencyNs); with one process per
  /// device it is part of the message latency instead. docs/simulator.md, "Waking a worker".
  TimeNs wakeLatencyNs = 0;

  std::int64_t deviceCount() const { return static_cast<std::int64_t>(devices.size()); }
  const Link& link(std::int64_t from, std::int64_t to) const;
  /// The host of device d; "" when the cluster names no hosts. Throws std::out_of_range for a
  /// device outside the cluster or a hosts list that is not one name per device.
  std::string hostOf(std::int64_t device) const;

  /// n identical devices joined by identical links (the CLI's --devices shorthand).
  static Cluster uniform(std::int64_t deviceCount, std::optional<Bytes> memoryBytes, BytesPerS bandwidthBytesPerS,
                         TimeNs latencyNs, const std::string& deviceName = "device");

  /// One device per entry of hosts (device d on host hosts[d], named deviceName:d): two devices
  /// on one host are joined by intraHostLink, two on different hosts by interHostLink. Throws
  /// std::invalid_argument for no hosts or an empty host name.
  static Cluster withHosts(const std::vector<std::string>& hosts, std::optional<Bytes> memoryBytes,
                           const Link& intraHostLink, const Link& interHostLink,
                           const std::string& deviceName = "device");
};

/// JSON form: {"schema", "devices": [{"name", "memory_bytes"?, "relative_speed"?, "host"?}],
/// then "link": {"latency_ns", "bandwidth_bytes_per_s"} (uniform), or "links": n x n matrix,
/// or -- when the devices name hosts -- "intra_host_link" and "inter_host_link", and
/// "process_per_device" (optional, false when absent)}.
/// clusterFromJson throws FormatError naming file, JSON path and expectation; toJson throws
/// std::invalid_argument for a hosts list that is not one name per device.
nlohmann::json toJson(const Cluster& cluster);
Cluster clusterFromJson(const nlohmann::json& json, const std::string& file);
Cluster readCluster(const std::string& path);
void writeCluster(const Cluster& cluster, const std::string& path);  ///< atomic

}  // namespace pipeprof
