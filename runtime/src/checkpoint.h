// Checkpointing support: the thread-local "recomputing" flag layers consult during recompute.
#pragma once

namespace pipeprof {

/// True while the calling thread replays a checkpointed forward (recompute(i, j)).
bool isRecomputing();

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
