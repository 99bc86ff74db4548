// The training step users run, written once for both training loops: warm-up and measured steps,
// each a pipeline step and an optimizer step, timed, traced and stoppable.
//
// trainAndMeasure (the threaded Pipe) and trainRank (one rank of the process layout) differ
// only in what surrounds a step (synchronising the devices, or a barrier of the ranks), in how
// the pipeline step runs and in what they record after a measured one: those are the hooks.
//
//   warm-up x w:  before  | runStep, optimizer and zero grads on each device | after    stop?
//   measured x s: before  | runStep, optimizer and zero grads on each device | after    measured(stepNs, waitNs), stop?
//                         ^--------------------- timed ----------------------^
//
// (the first step zeroes the gradients an earlier run left before its runStep, the last one
// leaves its own for the caller)
//
// waitNs: how long the threads that run the stages waited for a CPU during the step (the
// hooks' cpuWaitNs, cpu_wait.h), read outside the timed span; nullopt where the system does not say.
//
// Each pipeline device steps its own parameters with an optimizer of its own, on the thread
// that runs its stages (its worker, or the rank) and counted against its memory: the
// optimizer's state and the temporaries of its step are that device's, as in the memory model.
#pragma once

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/training_options.h>

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

class HostTracer;

struct StepHooks {
  /// Before a step's clock starts: synchronise the devices, or wait for the other ranks.
  std::function<void()> beforeStep;
  /// The pipeline step (forward, loss, backward from lossScale x the loss); returns the
  /// mini-batch loss, or an undefined tensor where this process does not compute it (a rank
  /// without the last stage).
  std::function<torch::Tensor(double lossScale)> runStep;
  /// After the optimizer step, before the clock stops: wait for the devices' work.
  std::function<void()> afterStep;
  /// After each measured step, with its time and its threads' wait for a CPU.
  std::function<void(TimeNs stepNs, std::optional<TimeNs> cpuWaitNs)> measured;
  /// The run-queue wait so far of the threads that run this process's stages (cpu_wait.h);
  /// nullopt where the system does not say.
  std::function<std::optional<TimeNs>()> cpuWaitNs;
  /// Runs task(k) for each device this process steps (k indexes runTrainingSteps'
  /// parametersByDevice), on the thread that runs that device's stages with its memory counted
  /// against the device, and returns when all are done (rethrowing the first error).
  std::function<void(const std::function<void(std::int64_t d)>& task)> onEachDevice;
  /// Loss scaling only: whether `found` holds on this process or on any other one (ranks agree
  /// over the transport; one process answers `found`).
  std::function<bool(bool found)> anyProcess;
};

/// Zeroes every defined gradient of `parameters` in place (so they stay allocated between steps,
/// as the memory model assumes); an undefined one stays so.
void zeroGradientsInPlace(const std::vector<torch::Tensor>& parameters);

/// Runs options.warmupSteps + options.steps steps: the pipeline step, then options.optimizer's
/// step of each device's parameters (parametersByDevice[d], stepped through hooks.onEachDevice; a
/// device without parameters steps nothing; the state, if any, is created at the first step, as
/// LibTorch does). Gradients are zeroed in place (so they stay allocated between steps, as the
/// memory model assumes): before the first step, and by each device right after its optimizer
/// step for the next one but after the last step, whose gradients stay for the caller (a run
/// stopped early leaves them zeroed). With loss scaling (fp16, or options.gradScaler) each device
/// unscales its gradients first, and if any device of any process found an inf or NaN no device
/// steps and the scale backs off. With a tracer, records "warmup" and "step" on lane "host" and
/// "optimizer" on lane "optimizer" of `traceDevice`. Returns the loss of every step whose loss
/// was defined, warm-up steps first.
/// Throws TrainingStopped when options.stop asks after a step, and what the hooks throw.
std::vector<double> runTrainingSteps(const TrainingOptions& options,
                                     const std::vector<std::vector<torch::Tensor>>& parametersByDevice,
                                     const StepHooks& hooks, HostTracer* tracer, const std::string& traceDevice);

/// Throws std::invalid_argument for non-positive steps or batch, negative warm-up steps,
/// chunks > batch, an optimizer hyperparameter out of range, or a precision a device cannot run
/// (the checks of every training loop, threaded or one rank's).
void validateTrainingOptions(const TrainingOptions& options);

}  // namespace pipeprof
