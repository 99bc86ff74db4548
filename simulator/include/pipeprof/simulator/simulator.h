// Discrete-event simulation of one candidate: predicted time, throughput, memory and timeline.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

struct SimulationOptions {
  bool recordTrace = false;  ///< fill SimulationResult::trace (ops on device lanes, memory counters)
  bool training = true;      ///< false: a forward-only step (eval / no grad), nothing checkpointed
  /// Fill Prediction::latePeakBytes (where a device frees another's tensors, the engine runs twice).
  bool latePeaks = true;
};

struct SimulationResult {
  Prediction prediction;
  Trace trace;                  ///< empty unless SimulationOptions::recordTrace
  std::int64_t eventCount = 0;  ///< events processed by the engine
};

/// Simulates one training step of the candidate under its schedule: each pipeline device's
/// worker runs its device order (docs/simulator.md). Prediction::busyNs, peakBytes and peakOp
/// have one entry per pipeline device (p = n / v; per stage when v is 1). Throws
/// std::invalid_argument when the candidate does not match the profile (balance sum != layer
/// count) or the cluster (a stage placed on a device that does not exist, devices not one per
/// pipeline device), or its schedule cannot run its shape (scheduleShapeError's text), naming
/// the values.
SimulationResult simulate(const Profile& profile, const Cluster& cluster, const Candidate& candidate,
                          const SimulationOptions& options = {});

/// Per pipeline device of the candidate (p entries), the model state of its stages as the
/// simulator charges it all step long: parameters, gradients and the optimizer's state (the
/// profile's param_bytes + grad_bytes + optimizer_bytes of their layers; on a CUDA profile in
/// whole allocator blocks). What the runtime holds between steps once the optimizer has
/// stepped. Throws what simulate() throws for a candidate that does not fit the profile.
std::vector<Bytes> modelStateBytes(const Profile& profile, const Candidate& candidate);

}  // namespace pipeprof
