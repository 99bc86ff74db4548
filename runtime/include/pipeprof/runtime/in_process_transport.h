// An in-process transport: threads of one process stand in for ranks (tests, the fake of c10d).
#pragma once

#include <pipeprof/runtime/transport.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace pipeprof {

/// One message as the world saw it, in the order sends were made.
struct SentMessage {
  int fromRank = 0;
  int toRank = 0;
  std::uint32_t tag = 0;
  std::vector<std::int64_t> shape;
};

/// The ranks of a world living in one process. transport(r) is rank r's end; sends copy the
/// tensor and complete at once, receives wait for the matching (sender, tag) in send order.
/// kill(r) makes every receive from r (and barrier) fail as a lost peer would.
class InProcessWorld {
 public:
  InProcessWorld(int worldSize, std::chrono::milliseconds timeout);

  std::unique_ptr<Transport> transport(int rank);
  /// Every message sent so far, in send order.
  std::vector<SentMessage> messages() const;
  void kill(int rank);

 private:
  friend class InProcessTransport;
  using Key = std::tuple<int, int, std::uint32_t>;  ///< (from, to, tag)

  int worldSize_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, std::vector<torch::Tensor>> inFlight_;
  std::vector<SentMessage> log_;
  std::vector<bool> dead_;
  std::int64_t barrierGeneration_ = 0;
  int barrierArrived_ = 0;
  std::string failure_;
};

}  // namespace pipeprof
