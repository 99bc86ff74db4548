// Attribution of device work that no external correlation id reached, by its stream and the
// time it was launched (the API record's start) or queued (the kernel record's queued time).
//
// Autograd runs a CUDA backward (and the recompute inside it) on its own thread for the
// device, where no worker pushed an op's id, so those kernels arrive without one; in cheap mode
// (no API records) no work carries one. But every partition of a Pipe computes on a stream of
// its own, and its compute ops (forward, recompute, backward) never overlap in time. So: work
// whose op is known teaches which partition a stream belongs to; a stream no such work taught
// goes to the partition of its device whose compute spans held most of its launches (votes);
// and other work launched on that stream while one of that partition's compute spans was open
// belongs to that span (the innermost, when a recompute runs inside a backward).
//
//   partition 0 (cuda:0)  |--forward(0,0)--|        |------backward(0,0)--------|
//                                                        |-recompute(0,0)-|
//   stream 13 launches        x   x   x             x      x   x   x           x
//                             forward(0,0)       backward  recompute          backward
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace pipeprof {

class StreamAttribution {
 public:
  /// A compute op span (host clock) of partition j, by its correlation id, on CUDA device
  /// `deviceId` (-1 when its device is not a CUDA device: such spans take no votes).
  void addSpan(std::int64_t j, std::int64_t correlationId, std::int64_t startNs, std::int64_t endNs,
               std::int64_t deviceId = -1);
  /// Work on (deviceId, streamId) belongs to partition j's ops. A stream seen with two
  /// partitions belongs to neither.
  void learnStream(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t j);
  /// Work without an op on (deviceId, streamId) launched at launchNs (host clock): one vote for
  /// every partition with a compute span on that device open then.
  void voteStream(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t launchNs);
  /// Gives every stream that learnStream did not teach the partition with the most votes, when
  /// it has strictly more than any other and votes from more than half the stream's launches
  /// (a copy stream whose work only sometimes overlaps a compute span stays nobody's). Call
  /// after the last vote, before find().
  void settleVotes();
  /// The correlation id of the innermost span of the stream's partition open at launchNs (host
  /// clock), or -1 when the stream is nobody's or no span was open.
  std::int64_t find(std::uint32_t deviceId, std::uint32_t streamId, std::int64_t launchNs) const;

 private:
  struct Span {
    std::int64_t correlationId;
    std::int64_t startNs;
    std::int64_t endNs;
  };
  using StreamKey = std::pair<std::uint32_t, std::uint32_t>;  ///< (deviceId, streamId)
  static constexpr std::int64_t kShared = -2;
  const Span* innermost(std::int64_t j, std::int64_t launchNs) const;

  std::map<StreamKey, std::int64_t> owners_;                  ///< stream -> j
  std::map<std::int64_t, std::vector<Span>> spans_;           ///< j -> its spans
  std::map<std::int64_t, std::int64_t> devices_;              ///< j -> its CUDA device (-1: none)
  std::map<StreamKey, std::map<std::int64_t, std::int64_t>> votes_;  ///< stream -> j -> votes
  std::map<StreamKey, std::int64_t> launches_;                       ///< stream -> launches that voted
};

}  // namespace pipeprof
