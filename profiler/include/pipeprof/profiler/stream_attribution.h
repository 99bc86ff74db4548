// Attribution of device work that no external correlation id reached, by its stream and the
// time it was launched.
//
// Autograd runs a CUDA backward (and the recompute inside it) on its own thread for the
// device, where no worker pushed an op's id, so those kernels arrive without one. But every
// partition of a Pipe computes on a stream of its own, and its compute ops (forward, recompute,
// backward) never overlap in time. So: work whose op is known teaches which partition a stream
// belongs to, and other work launched on that stream while one of that partition's compute
// spans was open belongs to that span (the innermost, when a recompute runs inside a backward).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace pipeprof {

class StreamAttribution {
 public:
  /// A compute op span (host clock) of partition j, by its correlation id.
  void addSpan(std::int64_t j, std::int64_t correlationId, std::int64_t startNs, std::int64_t endNs);
  /// Work on (deviceId, streamId) belongs to partition j's ops. A stream seen with two
  /// partitions belongs to neither.
  void learnStream(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t j);
  /// The correlation id of the innermost span of the stream's partition open at launchNs (host
  /// clock), or -1 when the stream is nobody's or no span was open.
  std::int64_t find(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t launchNs) const;

 private:
  struct Span {
    std::int64_t correlationId;
    std::int64_t startNs;
    std::int64_t endNs;
  };
  static constexpr std::int64_t kShared = -2;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> owners_;  ///< stream -> j
  std::map<std::int64_t, std::vector<Span>> spans_;                          ///< j -> its spans
};

}  // namespace pipeprof
