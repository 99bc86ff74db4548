// Discrete-event simulation of one candidate: predicted time, throughput, memory and timeline.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>

#include <cstdint>

namespace pipeprof {

struct SimulationOptions {
  bool recordTrace = false;  ///< fill SimulationResult::trace (ops on device lanes, memory counters)
  bool training = true;      ///< false: a forward-only step (eval / no grad), nothing checkpointed
};

struct SimulationResult {
  Prediction prediction;
  Trace trace;                 ///< empty unless SimulationOptions::recordTrace
  std::int64_t eventCount = 0; ///< events processed by the engine
};

/// Simulates one training step of the candidate. Throws std::invalid_argument when the
/// candidate does not match the profile (balance sum != layer count) or the cluster (a
/// partition placed on a device that does not exist), naming the values.
SimulationResult simulate(const Profile& profile, const Cluster& cluster, const Candidate& candidate,
                          const SimulationOptions& options = {});

}  // namespace pipeprof
