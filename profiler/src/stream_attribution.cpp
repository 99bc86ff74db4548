// Attribution by stream and launch (or queue) time (see stream_attribution.h).
#include <pipeprof/profiler/stream_attribution.h>

namespace pipeprof {

void StreamAttribution::addSpan(std::int64_t j, std::int64_t correlationId, std::int64_t startNs,
                                std::int64_t endNs, std::int64_t deviceId) {
  spans_[j].push_back(Span{correlationId, startNs, endNs});
  if (deviceId >= 0) devices_[j] = deviceId;
}

void StreamAttribution::learnStream(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t j) {
  const auto [it, inserted] = owners_.emplace(std::make_pair(deviceId, streamId), j);
  if (!inserted && it->second != j) it->second = kShared;
}

void StreamAttribution::voteStream(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t launchNs) {
  ++launches_[{deviceId, streamId}];
  for (const auto& [j, device] : devices_) {
    if (device != static_cast<std::int64_t>(deviceId) || innermost(j, launchNs) == nullptr) continue;
    ++votes_[{deviceId, streamId}][j];
  }
}

void StreamAttribution::settleVotes() {
  for (const auto& [stream, votes] : votes_) {
    if (owners_.count(stream) != 0) continue;  // taught by work with an id
    std::int64_t best = -1;
    std::int64_t most = 0;
    bool tied = false;
    for (const auto& [j, count] : votes) {
      if (count > most) {
        best = j;
        most = count;
        tied = false;
      } else if (count == most) {
        tied = true;
      }
    }
    if (best >= 0 && !tied && 2 * most > launches_[stream]) owners_.emplace(stream, best);
  }
  votes_.clear();
  launches_.clear();
}

const StreamAttribution::Span* StreamAttribution::innermost(std::int64_t j, std::int64_t launchNs) const {
  const auto spans = spans_.find(j);
  if (spans == spans_.end()) return nullptr;
  const Span* inner = nullptr;
  for (const Span& span : spans->second) {
    if (launchNs < span.startNs || launchNs > span.endNs) continue;
    if (inner == nullptr || span.endNs - span.startNs < inner->endNs - inner->startNs) inner = &span;
  }
  return inner;
}

std::int64_t StreamAttribution::find(std::uint32_t deviceId, std::uint32_t streamId,
                                     std::int64_t launchNs) const {
  const auto owner = owners_.find({deviceId, streamId});
  if (owner == owners_.end() || owner->second == kShared) return -1;
  const Span* span = innermost(owner->second, launchNs);
  return span != nullptr ? span->correlationId : -1;
}

}  // namespace pipeprof
