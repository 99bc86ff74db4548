// The thread driving a pipeline's steps, scheduled so that it never preempts a bound worker.
#pragma once

namespace pipeprof {

/// While it lives, the calling thread (the one driving the steps) is SCHED_BATCH: woken
/// mid-step, it waits for a core instead of preempting a worker bound to it (docs/runtime.md,
/// "Threads"). Restores SCHED_OTHER after; does nothing unless `enabled` and the thread runs
/// under SCHED_OTHER now (a real-time or idle caller keeps its policy).
class DrivingThreadAsBatch {
 public:
  explicit DrivingThreadAsBatch(bool enabled);
  ~DrivingThreadAsBatch();
  DrivingThreadAsBatch(const DrivingThreadAsBatch&) = delete;
  DrivingThreadAsBatch& operator=(const DrivingThreadAsBatch&) = delete;

 private:
  bool enabled_;
};

}  // namespace pipeprof
