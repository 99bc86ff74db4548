// Attribution by stream and launch time (see stream_attribution.h).
#include <pipeprof/profiler/stream_attribution.h>

namespace pipeprof {

void StreamAttribution::addSpan(std::int64_t j, std::int64_t correlationId, std::int64_t startNs,
                                std::int64_t endNs) {
  spans_[j].push_back(Span{correlationId, startNs, endNs});
}

void StreamAttribution::learnStream(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t j) {
  const auto [it, inserted] = owners_.emplace(std::make_pair(deviceId, streamId), j);
  if (!inserted && it->second != j) it->second = kShared;
}

std::int64_t StreamAttribution::find(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t launchNs) const {
  const auto owner = owners_.find({deviceId, streamId});
  if (owner == owners_.end() || owner->second == kShared) return -1;
  const auto spans = spans_.find(owner->second);
  if (spans == spans_.end()) return -1;
  const Span* innermost = nullptr;
  for (const Span& span : spans->second) {
    if (launchNs < span.startNs || launchNs > span.endNs) continue;
    if (innermost == nullptr || span.endNs - span.startNs < innermost->endNs - innermost->startNs) innermost = &span;
  }
  return innermost != nullptr ? innermost->correlationId : -1;
}

}  // namespace pipeprof
