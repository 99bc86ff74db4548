// Simulates candidates of one profile on one cluster, reusing compiled schedules, cost tables and engine buffers.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"
#include "engine.h"
#include "optimizer_step.h"
#include "shared_gradients.h"

#include <pipeprof/simulator/simulator.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace pipeprof::sim {

/// Throws std::invalid_argument when the candidate does not fit the profile or the cluster
/// (balance sum, non-positive entries, chunks, batch, device indices), naming the values.
void validateCandidate(const Profile& profile, const Cluster& cluster, const Candidate& candidate);

class CandidateSimulator {
 public:
  /// Keeps references: profile and cluster must outlive the simulator. Throws
  /// std::invalid_argument for a cluster without devices, with a non-positive speed, or with
  /// hosts that are not one name per device.
  CandidateSimulator(const Profile& profile, const Cluster& cluster);

  /// Simulates a validated candidate into `out` (its vectors are reused); with latePeaks also
  /// Prediction::latePeakBytes, running the engine a second time where a device frees another's
  /// tensors.
  void simulate(const Candidate& candidate, bool training, bool recordTrace, bool latePeaks, SimulationResult& out);

  /// Per cluster device: the sum of the peaks of the pipeline devices placed on it (last run).
  const std::vector<Bytes>& devicePeakBytes() const { return devicePeakBytes_; }

  /// A zb1p candidate's deferred W's within 1F1B's memory (deferralWithinOneFOneBMemory).
  std::vector<std::int64_t> deferralWithinOneFOneBMemory(const Candidate& candidate);

 private:
  struct Key {
    ScheduleKind kind;
    std::int64_t stagesPerDevice;
    std::int64_t stages;
    std::int64_t chunks;
    Checkpoint mode;
    bool training;
    /// Per skip route: its stash's and pop's stages, and whether each opens it (bits 1, 2).
    std::vector<std::int32_t> skipStages;
    std::vector<std::int64_t> deferredWeights;  ///< zb1p's (PipelineShape::deferredWeights)
    bool operator<(const Key& other) const {
      return std::tie(kind, stagesPerDevice, stages, chunks, mode, training, skipStages, deferredWeights) <
             std::tie(other.kind, other.stagesPerDevice, other.stages, other.chunks, other.mode, other.training,
                      other.skipStages, other.deferredWeights);
    }
  };
  const CompiledSchedule& compiledFor(const Candidate& candidate, std::int64_t count, bool training);
  /// Each lane's peak after a run with `memory`: its stages' static bytes (a parameter they
  /// share counted once), plus its ops' peak with the cast copies or the optimizer's
  /// temporaries, whichever is larger; with peakOp the op it was reached at.
  void lanePeaks(const CompiledSchedule& compiled, const MemoryTimeline& memory, std::vector<Bytes>& peakBytes,
                 std::vector<std::string>* peakOp) const;

  const Profile& profile_;
  const Cluster& cluster_;
  CostModel costs_;
  Engine engine_;
  ResolvedCosts resolved_;
  OptimizerStepCosts optimizer_;
  SharedGradientCosts shared_;
  std::vector<std::int64_t> firstLayer_;
  std::vector<Bytes> devicePeakBytes_;
  Key scratchKey_;
  std::map<Key, std::unique_ptr<CompiledSchedule>> cache_;
};

}  // namespace pipeprof::sim
