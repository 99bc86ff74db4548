// One phase of a step (its forward ops, its recompute and backward ops, or all) on the workers.
//
// start() and finish() may run on different threads: the backward is started by the
// autograd node that receives the output gradients, which must not block, and finished by
// the node that returns the input gradients (pipe_backward.h).
#pragma once

#include "threaded/threaded_step.h"
#include "threaded/worker.h"

#include <future>
#include <memory>
#include <vector>

namespace pipeprof {

using Workers = std::vector<std::unique_ptr<Worker>>;

/// One phase of a step on the devices' workers (one per pipeline device; worker d runs
/// ThreadedStep::run(d, phase)). With a single device nothing can
/// overlap: start() does nothing and finish() runs its ops on the calling thread, saving the
/// hand-off to the worker (the Pipe's overhead over the plain Sequential).
class PhaseRun {
 public:
  PhaseRun(std::shared_ptr<Workers> workers, std::shared_ptr<ThreadedStep> step, StepPhase phase);

  /// Hands each device's ops to its worker and returns at once.
  void start();
  /// After start(): waits for the ops, makes the calling thread's current streams wait for the workers'
  /// (PipeStreams::join) and throws the step's first error as a PipeError.
  void finish();

  ThreadedStep& step() const { return *step_; }

 private:
  std::shared_ptr<Workers> workers_;
  std::shared_ptr<ThreadedStep> step_;
  StepPhase phase_;
  std::vector<std::future<void>> done_;
};

}  // namespace pipeprof
