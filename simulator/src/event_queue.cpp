// The simulator's event queue: op completions ordered by (time, sequence) so ties resolve deterministically.
#include "event_queue.h"

#include <cstddef>

namespace pipeprof::sim {

void EventQueue::push(TimeNs timeNs, std::uint32_t op, std::uint32_t tag) {
  heap_.push_back(Event{timeNs, nextSequence_++, op, tag});
  std::size_t child = heap_.size() - 1;
  const Event moving = heap_[child];
  while (child > 0) {
    const std::size_t parent = (child - 1) / 2;
    if (!before(moving, heap_[parent])) break;
    heap_[child] = heap_[parent];
    child = parent;
  }
  heap_[child] = moving;
}

Event EventQueue::pop() {
  const Event result = heap_.front();
  const Event moving = heap_.back();
  heap_.pop_back();
  const std::size_t size = heap_.size();
  if (size > 0) {
    std::size_t parent = 0;
    while (true) {
      std::size_t child = 2 * parent + 1;
      if (child >= size) break;
      if (child + 1 < size && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], moving)) break;
      heap_[parent] = heap_[child];
      parent = child;
    }
    heap_[parent] = moving;
  }
  return result;
}

}  // namespace pipeprof::sim
