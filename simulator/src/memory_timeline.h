// Bytes in use per partition over simulated time: running totals, peaks, the op of each peak, device counters.
#pragma once

#include "compiled_schedule.h"

#include <pipeprof/core/units.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// One value of a device's "memory" counter (static + dynamic bytes of its partitions): the
/// state after everything that happened at timeNs (an instantaneous peak inside one instant,
/// such as an op's results allocated before the tensors it frees are released, shows in peaks, not here).
struct MemorySample {
  TimeNs timeNs = 0;
  std::int32_t device = 0;
  Bytes bytes = 0;
};

class MemoryTimeline {
 public:
  /// Starts a run: partition j lives on partitionDevice[j]; staticBytes are live throughout.
  void reset(const std::vector<std::int32_t>& partitionDevice, const std::vector<Bytes>& staticBytes,
             std::int32_t deviceCount, bool recordSamples);

  /// Applies allocations (+bytes) of effects [range) for `op` at timeNs; a new maximum of a
  /// partition's dynamic bytes records `op` as its peak op.
  void allocate(const CompiledSchedule& compiled, Range range, const Bytes* bytes, std::uint32_t op, TimeNs timeNs);
  /// Applies releases (-bytes) of effects [range) at timeNs.
  void release(const CompiledSchedule& compiled, Range range, const Bytes* bytes, TimeNs timeNs);

  /// Largest dynamic bytes of partition j (static not included).
  Bytes peakDynamic(std::int32_t j) const { return peak_[static_cast<std::size_t>(j)]; }
  /// The op at which partition j's peak was first reached, or -1 when it never rose above 0.
  std::int64_t peakOp(std::int32_t j) const { return peakOp_[static_cast<std::size_t>(j)]; }
  Bytes currentDynamic(std::int32_t j) const { return current_[static_cast<std::size_t>(j)]; }
  const std::vector<MemorySample>& samples() const { return samples_; }

 private:
  void sample(TimeNs timeNs);

  std::vector<Bytes> current_;
  std::vector<Bytes> peak_;
  std::vector<std::int64_t> peakOp_;
  const std::vector<std::int32_t>* partitionDevice_ = nullptr;
  bool record_ = false;
  std::vector<Bytes> deviceBytes_;
  std::vector<char> deviceChanged_;
  std::vector<std::int64_t> lastSample_;  ///< per device: index of its latest sample, or -1
  std::vector<MemorySample> samples_;
};

}  // namespace pipeprof::sim
