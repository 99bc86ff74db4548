// One phase of a step (its forward ops, or its recompute and backward ops) on the workers.
#include "phase_run.h"

#include <ATen/Parallel.h>

namespace pipeprof {
namespace {

void runOps(Step& step, std::int64_t j, StepPhase phase) {
  if (phase == StepPhase::Forward) {
    step.runForward(j);
  } else {
    step.runBackward(j);
  }
}

}  // namespace

PhaseRun::PhaseRun(std::shared_ptr<Workers> workers, std::shared_ptr<Step> step, StepPhase phase)
    : workers_(std::move(workers)), step_(std::move(step)), phase_(phase) {}

void PhaseRun::start() {
  if (workers_->size() == 1) {
    return;  // finish() runs the ops
  }
  for (std::size_t j = 0; j < workers_->size(); ++j) {
    // The task shares the step: a started backward whose PipeBackward never runs (another
    // node of the caller's graph failed) still finishes on valid cells.
    done_.push_back((*workers_)[j]->submit([step = step_, partition = static_cast<std::int64_t>(j), phase = phase_] {
      // ATen's OpenMP thread count is per thread: workers adopt the caller's intra-op setting.
      if (at::get_num_threads() != step->config().intraOpThreads) {
        at::set_num_threads(step->config().intraOpThreads);
      }
      runOps(*step, partition, phase);
    }));
  }
}

void PhaseRun::finish() {
  if (workers_->size() == 1) {
    runOps(*step_, 0, phase_);
  }
  for (auto& future : done_) {
    future.get();
  }
  done_.clear();
  step_->config().streams->join();
  step_->rethrowIfFailed();
}

}  // namespace pipeprof
