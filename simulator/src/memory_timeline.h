// Bytes in use per pipeline device over simulated time: running totals, peaks, the op of each peak, device counters.
#pragma once

#include "compiled_schedule.h"

#include <pipeprof/core/units.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// One value of a device's "memory" counter (static + dynamic bytes of its stages): the
/// state after everything that happened at timeNs (an instantaneous peak inside one instant,
/// such as an op's results allocated before the tensors it frees are released, shows in peaks, not here).
struct MemorySample {
  TimeNs timeNs = 0;
  std::int32_t device = 0;
  Bytes bytes = 0;
};

/// Memory effects name a stage (stage) j; the timeline sums them per lane, the pipeline
/// device d that holds the stage (Schedule::deviceOf; one lane per stage when v is 1), and keeps each
/// lane's running total and peak.
class MemoryTimeline {
 public:
  /// Starts a run: stage j counts on lane stageLane[j] (< laneCount) and lives on cluster
  /// device stageDevice[j]; staticBytes (per stage) are live throughout.
  void reset(const std::vector<std::int32_t>& stageLane, std::int32_t laneCount,
             const std::vector<std::int32_t>& stageDevice, const std::vector<Bytes>& staticBytes,
             std::int32_t deviceCount, bool recordSamples);
  /// The same with one lane per stage.
  void reset(const std::vector<std::int32_t>& stageDevice, const std::vector<Bytes>& staticBytes,
             std::int32_t deviceCount, bool recordSamples);

  /// Applies allocations (+bytes) of effects [range) for `op` at timeNs; a new maximum of a
  /// lane's dynamic bytes records `op` as its peak op.
  void allocate(const CompiledSchedule& compiled, Range range, const Bytes* bytes, std::uint32_t op, TimeNs timeNs);
  /// Applies releases (-bytes) of effects [range) at timeNs.
  void release(const CompiledSchedule& compiled, Range range, const Bytes* bytes, TimeNs timeNs);
  /// The same for effects [first, last) (a hold's one effect).
  void allocate(const MemoryEffect* first, const MemoryEffect* last, const Bytes* bytes, std::uint32_t op,
                TimeNs timeNs);
  void release(const MemoryEffect* first, const MemoryEffect* last, const Bytes* bytes, TimeNs timeNs);

  /// Largest dynamic bytes of lane d (static not included): the sum over its stages.
  Bytes peakDynamic(std::int32_t d) const { return peak_[static_cast<std::size_t>(d)]; }
  /// The op at which lane d's peak was first reached, or -1 when it never rose above 0.
  std::int64_t peakOp(std::int32_t d) const { return peakOp_[static_cast<std::size_t>(d)]; }
  Bytes currentDynamic(std::int32_t d) const { return current_[static_cast<std::size_t>(d)]; }
  const std::vector<MemorySample>& samples() const { return samples_; }

 private:
  void sample(TimeNs timeNs);

  std::vector<Bytes> current_;  ///< per lane
  std::vector<Bytes> peak_;     ///< per lane
  std::vector<std::int64_t> peakOp_;
  std::vector<std::int32_t> identityLanes_;
  const std::vector<std::int32_t>* stageLane_ = nullptr;
  const std::vector<std::int32_t>* stageDevice_ = nullptr;
  bool record_ = false;
  std::vector<Bytes> deviceBytes_;
  std::vector<char> deviceChanged_;
  std::vector<std::int64_t> lastSample_;  ///< per device: index of its latest sample, or -1
  std::vector<MemorySample> samples_;
};

}  // namespace pipeprof::sim
