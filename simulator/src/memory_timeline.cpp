// Bytes in use per pipeline device over simulated time: running totals, peaks, the op of each peak, device counters.
#include "memory_timeline.h"

#include <cstddef>

namespace pipeprof::sim {

void MemoryTimeline::reset(const std::vector<std::int32_t>& stageDevice, const std::vector<Bytes>& staticBytes,
                           std::int32_t deviceCount, bool recordSamples) {
  identityLanes_.resize(stageDevice.size());
  for (std::size_t j = 0; j < identityLanes_.size(); ++j) identityLanes_[j] = static_cast<std::int32_t>(j);
  reset(identityLanes_, static_cast<std::int32_t>(identityLanes_.size()), stageDevice, staticBytes, deviceCount,
        recordSamples);
}

void MemoryTimeline::reset(const std::vector<std::int32_t>& stageLane, std::int32_t laneCount,
                           const std::vector<std::int32_t>& stageDevice, const std::vector<Bytes>& staticBytes,
                           std::int32_t deviceCount, bool recordSamples) {
  const std::size_t n = stageDevice.size();
  const auto lanes = static_cast<std::size_t>(laneCount);
  current_.assign(lanes, 0);
  peak_.assign(lanes, 0);
  peakOp_.assign(lanes, -1);
  stageLane_ = &stageLane;
  stageDevice_ = &stageDevice;
  record_ = recordSamples;
  samples_.clear();
  if (record_) {
    deviceBytes_.assign(static_cast<std::size_t>(deviceCount), 0);
    deviceChanged_.assign(static_cast<std::size_t>(deviceCount), 0);
    lastSample_.assign(static_cast<std::size_t>(deviceCount), -1);
    for (std::size_t j = 0; j < n; ++j) {
      const auto device = static_cast<std::size_t>(stageDevice[j]);
      deviceBytes_[device] += staticBytes[j];
      deviceChanged_[device] = 1;
    }
    sample(0);
  }
}

void MemoryTimeline::allocate(const CompiledSchedule& compiled, Range range, const Bytes* bytes, std::uint32_t op,
                              TimeNs timeNs) {
  allocate(compiled.effects.data() + range.begin, compiled.effects.data() + range.end, bytes, op, timeNs);
}

void MemoryTimeline::release(const CompiledSchedule& compiled, Range range, const Bytes* bytes, TimeNs timeNs) {
  release(compiled.effects.data() + range.begin, compiled.effects.data() + range.end, bytes, timeNs);
}

void MemoryTimeline::allocate(const MemoryEffect* first, const MemoryEffect* last, const Bytes* bytes, std::uint32_t op,
                              TimeNs timeNs) {
  for (const MemoryEffect* e = first; e != last; ++e) {
    const MemoryEffect& effect = *e;
    const Bytes amount = bytes[effect.slot];
    if (amount == 0) continue;
    const auto j = static_cast<std::size_t>(effect.j);
    const auto lane = static_cast<std::size_t>((*stageLane_)[j]);
    current_[lane] += amount;
    if (current_[lane] > peak_[lane]) {
      peak_[lane] = current_[lane];
      peakOp_[lane] = op;
    }
    if (record_) {
      const auto device = static_cast<std::size_t>((*stageDevice_)[j]);
      deviceBytes_[device] += amount;
      deviceChanged_[device] = 1;
    }
  }
  if (record_) sample(timeNs);
}

void MemoryTimeline::release(const MemoryEffect* first, const MemoryEffect* last, const Bytes* bytes, TimeNs timeNs) {
  for (const MemoryEffect* e = first; e != last; ++e) {
    const MemoryEffect& effect = *e;
    const Bytes amount = bytes[effect.slot];
    if (amount == 0) continue;
    const auto j = static_cast<std::size_t>(effect.j);
    current_[static_cast<std::size_t>((*stageLane_)[j])] -= amount;
    if (record_) {
      const auto device = static_cast<std::size_t>((*stageDevice_)[j]);
      deviceBytes_[device] -= amount;
      deviceChanged_[device] = 1;
    }
  }
  if (record_) sample(timeNs);
}

void MemoryTimeline::sample(TimeNs timeNs) {
  for (std::size_t device = 0; device < deviceChanged_.size(); ++device) {
    if (!deviceChanged_[device]) continue;
    deviceChanged_[device] = 0;
    // One value per device and instant: the state once everything at that instant happened.
    const std::int64_t last = lastSample_[device];
    if (last >= 0 && samples_[static_cast<std::size_t>(last)].timeNs == timeNs) {
      samples_[static_cast<std::size_t>(last)].bytes = deviceBytes_[device];
      continue;
    }
    lastSample_[device] = static_cast<std::int64_t>(samples_.size());
    samples_.push_back(MemorySample{timeNs, static_cast<std::int32_t>(device), deviceBytes_[device]});
  }
}

}  // namespace pipeprof::sim
