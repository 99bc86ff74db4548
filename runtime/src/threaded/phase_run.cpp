// One phase of a step (its forward ops, its recompute and backward ops, or all) on the workers.
#include "threaded/phase_run.h"

#include <ATen/Parallel.h>

namespace pipeprof {
PhaseRun::PhaseRun(std::shared_ptr<Workers> workers, std::shared_ptr<ThreadedStep> step, StepPhase phase)
    : workers_(std::move(workers)), step_(std::move(step)), phase_(phase) {}

void PhaseRun::start() {
  if (workers_->size() == 1) {
    return;  // finish() runs the ops
  }
  for (std::size_t d = 0; d < workers_->size(); ++d) {
    // The task shares the step: a started backward whose PipeBackward never runs (another
    // node of the caller's graph failed) still finishes on valid cells.
    done_.push_back((*workers_)[d]->submit([step = step_, device = static_cast<std::int64_t>(d), phase = phase_] {
      // ATen's OpenMP thread count is per thread: workers adopt the caller's intra-op setting.
      if (at::get_num_threads() != step->intraOpThreads()) {
        at::set_num_threads(step->intraOpThreads());
      }
      step->run(device, phase);
    }));
  }
}

void PhaseRun::finish() {
  if (workers_->size() == 1) {
    step_->run(0, phase_);
  }
  for (auto& future : done_) {
    future.get();
  }
  done_.clear();
  step_->join();
  step_->rethrowIfFailed();
  if (phase_ != StepPhase::Forward) step_->sumSharedGradients();  // every backward of the step has run
}

}  // namespace pipeprof
