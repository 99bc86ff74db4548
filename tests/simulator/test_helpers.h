// Small literal profiles and clusters for the simulator tests.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/trace.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::test {

/// Per-sample costs of one layer (a single cost sample at micro-batch 1, so costs scale
/// exactly with the micro-batch size).
struct LayerCosts {
  TimeNs forwardNs = 0;
  TimeNs backwardNs = 0;
  Bytes savedBytes = 0;
  Bytes outputBytes = 0;
  Bytes workspaceBytes = 0;  ///< the forward's and the backward's alike
  Bytes paramBytes = 0;
  /// The backward split into I and W (zero-bubble schedules): absent in older profiles.
  std::optional<BackwardSplit> split{};
};

inline Profile makeProfile(const std::vector<LayerCosts>& layers) {
  Profile profile;
  profile.environment.model = "test";
  profile.environment.deviceType = "cpu";
  for (std::size_t l = 0; l < layers.size(); ++l) {
    LayerProfile layer;
    layer.name = "layer" + std::to_string(l);
    layer.paramBytes = layers[l].paramBytes;
    layer.gradBytes = layers[l].paramBytes;
    CostSample cost;
    cost.microBatch = 1;
    cost.forwardNs = layers[l].forwardNs;
    cost.backwardNs = layers[l].backwardNs;
    cost.savedBytes = layers[l].savedBytes;
    cost.outputBytes = layers[l].outputBytes;
    cost.forwardWorkspaceBytes = layers[l].workspaceBytes;
    cost.backwardWorkspaceBytes = layers[l].workspaceBytes;
    cost.backwardSplit = layers[l].split;
    layer.costs.push_back(cost);
    profile.layers.push_back(layer);
  }
  return profile;
}

/// k identical layers.
inline Profile uniformProfile(std::int64_t k, const LayerCosts& costs) {
  return makeProfile(std::vector<LayerCosts>(static_cast<std::size_t>(k), costs));
}

/// n devices joined by zero-cost links (no copy time, no copy buffers).
inline Cluster freeCluster(std::int64_t n, std::optional<Bytes> memoryBytes = std::nullopt) {
  return Cluster::uniform(n, memoryBytes, 0.0, 0, "dev");
}

inline Candidate makeCandidate(std::vector<std::int64_t> balance, std::int64_t chunks, Checkpoint mode,
                               std::int64_t batch) {
  Candidate candidate;
  candidate.balance = std::move(balance);
  candidate.chunks = chunks;
  candidate.checkpoint = mode;
  candidate.batch = batch;
  return candidate;
}

/// End of the op labelled `name` in a recorded trace (-1 when absent).
inline TimeNs endOf(const Trace& trace, const std::string& name) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Span && e.name == name) return e.endNs();
  }
  return -1;
}

/// Start of the op labelled `name` in a recorded trace (-1 when absent).
inline TimeNs startOf(const Trace& trace, const std::string& name) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Span && e.name == name) return e.startNs;
  }
  return -1;
}

/// Device `device`'s memory counter over time, from a recorded trace.
inline std::map<TimeNs, double> counterOf(const Trace& trace, const std::string& device) {
  std::map<TimeNs, double> values;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Counter && e.device == device) values[e.startNs] = e.value;
  }
  return values;
}

}  // namespace pipeprof::test
