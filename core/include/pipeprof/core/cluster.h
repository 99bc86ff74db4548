// The cluster (pipeprof.cluster/v1): devices with memory and speed, and the links between them.
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

  std::int64_t deviceCount() const { return static_cast<std::int64_t>(devices.size()); }
  const Link& link(std::int64_t from, std::int64_t to) const;

  /// n identical devices joined by identical links (the CLI's --devices shorthand).
  static Cluster uniform(std::int64_t deviceCount, std::optional<Bytes> memoryBytes,
                         BytesPerS bandwidthBytesPerS, TimeNs latencyNs,
                         const std::string& deviceName = "device");
};

/// JSON form: {"schema", "devices": [{"name", "memory_bytes"?, "relative_speed"?}],
/// "link": {"latency_ns", "bandwidth_bytes_per_s"} (uniform) or "links": n x n matrix}.
/// clusterFromJson throws FormatError naming file, JSON path and expectation.
nlohmann::json toJson(const Cluster& cluster);
Cluster clusterFromJson(const nlohmann::json& json, const std::string& file);
Cluster readCluster(const std::string& path);
void writeCluster(const Cluster& cluster, const std::string& path);  ///< atomic

}  // namespace pipeprof
