// The simulator's event queue: op completions ordered by (time, sequence) so ties resolve deterministically.
#pragma once

#include <pipeprof/core/units.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

struct Event {
  TimeNs timeNs = 0;
  std::uint64_t sequence = 0;  ///< order of scheduling; breaks ties between equal times
  std::uint32_t op = 0;        ///< the op that completes (tag 0), or what the tag says
  std::uint32_t tag = 0;       ///< 0: op completes; other values are the engine's (shared links)
};

/// A binary min-heap on (timeNs, sequence). clear() keeps the storage for the next run.
class EventQueue {
 public:
  void clear() {
    heap_.clear();
    nextSequence_ = 0;
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  /// Schedules op's completion at timeNs (or, with a tag, another event of the engine's).
  void push(TimeNs timeNs, std::uint32_t op, std::uint32_t tag = 0);
  /// Removes and returns the earliest event.
  Event pop();

 private:
  static bool before(const Event& a, const Event& b) {
    return a.timeNs != b.timeNs ? a.timeNs < b.timeNs : a.sequence < b.sequence;
  }
  std::vector<Event> heap_;
  std::uint64_t nextSequence_ = 0;
};

}  // namespace pipeprof::sim
