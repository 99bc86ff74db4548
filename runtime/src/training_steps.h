// The training step users run, written once for both training loops: warm-up and measured steps,
// each a pipeline step and an optimizer step, timed, traced and stoppable.
//
// trainAndMeasure (the threaded Pipe) and trainRank (one rank of the process layout) differ
// only in what surrounds a step (synchronising the devices, or a barrier of the ranks), in how
// the pipeline step runs and in what they record after a measured one: those are the hooks.
//
//   warm-up x w:  before  | zero grads, runStep, optimizer | after    stop?
//   measured x s: before  | zero grads, runStep, optimizer | after    measured(stepNs), stop?
//                         ^------------ timed -------------^
#pragma once

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/training_loop.h>

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace pipeprof {

class HostTracer;

struct StepHooks {
  /// Before a step's clock starts: synchronise the devices, or wait for the other ranks.
  std::function<void()> beforeStep;
  /// The pipeline step (forward, loss, backward); returns the mini-batch loss, or an undefined
  /// tensor where this process does not compute it (a rank without the last stage).
  std::function<torch::Tensor()> runStep;
  /// After the optimizer step, before the clock stops: wait for the devices' work.
  std::function<void()> afterStep;
  /// After each measured step, with its time.
  std::function<void(TimeNs)> measured;
};

/// Runs options.warmupSteps + options.steps steps: gradients zeroed in place (so they stay
/// allocated between steps, as the memory model assumes), the pipeline step, then
/// options.optimizer's step over `parameters` (none: no optimizer step; its state, if any, is
/// created at its first step, as LibTorch does). With a
/// tracer, records "warmup" and "step" on lane "host" and "optimizer" on lane "optimizer" of
/// `traceDevice`. Returns the loss of every step whose loss was defined, warm-up steps first.
/// Throws TrainingStopped when options.stop asks after a step, and what the hooks throw.
std::vector<double> runTrainingSteps(const TrainingOptions& options, const std::vector<torch::Tensor>& parameters,
                                     const StepHooks& hooks, HostTracer* tracer, const std::string& traceDevice);

/// Throws std::invalid_argument for non-positive steps or batch, negative warm-up steps,
/// chunks > batch, or an optimizer hyperparameter out of range (the checks of every training
/// loop, threaded or one rank's).
void validateTrainingOptions(const TrainingOptions& options);

}  // namespace pipeprof
