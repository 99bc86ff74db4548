// The loop both executors run a pipeline device's ops in: Schedule::deviceOrder(d) on the stage
// core, and the one place where an op's failure becomes the PipeError the caller sees.
#pragma once

#include "stage/stage_core.h"

#include <pipeprof/core/schedule.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace pipeprof {

/// What an executor adds to the op loop; every hook may be left empty.
struct OpLoopHooks {
  /// Whether the op runs at all (the threaded Pipe runs a phase's ops at a time); all when empty.
  std::function<bool(const Op& op)> selects;
  /// Checked before each op: true stops the loop quietly (another worker failed first).
  std::function<bool()> stopped;
  /// Runs order[k] (its `run`) inside what the executor needs around it (the threaded Pipe: the
  /// stage's compute stream; a rank: the receives of the next ops posted first).
  std::function<void(std::size_t k, const Op& op, const std::function<void()>& run)> around;
};

/// Runs pipeline device d's ops of `schedule` in Schedule::deviceOrder(d) on `core`, on the
/// calling thread. Throws PipeError naming the op that failed (opLocation), its stage and
/// micro-batch, with the original exception nested; an exception that is not a
/// std::exception (the threaded channel's StepAborted) passes unchanged.
void runDeviceOps(StageCore& core, const Schedule& schedule, std::int64_t d, const OpLoopHooks& hooks = {});

}  // namespace pipeprof
