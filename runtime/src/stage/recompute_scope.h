// The thread-local "recomputing" flag a checkpointed stage sets while it replays its forward
// (layers read it with isRecomputing(), layer_hooks.h).
#pragma once

namespace pipeprof {

/// Marks the calling thread as recomputing for the scope.
class RecomputeScope {
 public:
  RecomputeScope();
  ~RecomputeScope();
  RecomputeScope(const RecomputeScope&) = delete;
  RecomputeScope& operator=(const RecomputeScope&) = delete;

 private:
  bool previous_;
};

}  // namespace pipeprof
