// The threaded Pipe's step: each device's worker runs its stages' ops on the shared stage core.
#include "threaded/threaded_step.h"

#include "stage/op_loop.h"

#include <pipeprof/runtime/memory_tracker.h>

namespace pipeprof {
namespace {

bool inPhase(OpKind kind, StepPhase phase) {
  switch (phase) {
    case StepPhase::Forward: return kind == OpKind::Forward;
    case StepPhase::Backward: return kind == OpKind::Recompute || isBackwardPass(kind);  // the caller computed the loss
    case StepPhase::Training: return true;
  }
  return false;
}

}  // namespace

ThreadedStep::ThreadedStep(ThreadedStepConfig config, std::vector<Tensors> microBatches,
                           std::vector<torch::Tensor> targets)
    : config_(std::move(config)),
      channel_(*config_.core.schedule, *config_.streams, config_.core.tracer, config_.core.traceDevices),
      core_(config_.core, channel_, &channel_, std::move(microBatches), std::move(targets)) {}

void ThreadedStep::run(std::int64_t d, StepPhase phase) {
  // Everything the worker allocates counts against its device, whichever stage it runs.
  ScopedAllocationTag tag(d);
  const AutocastScope autocast = core_.autocastFor(d);
  OpLoopHooks hooks;
  hooks.selects = [this, phase](const Op& op) {
    return op.isCompute() && inPhase(op.kind, phase) && (op.kind != OpKind::Loss || config_.core.lossFn != nullptr);
  };
  hooks.stopped = [this] { return channel_.abandoned(); };
  hooks.around = [this](std::size_t, const Op& op, const std::function<void()>& run) {
    // Each op runs on its own stage's compute stream (a device's stages have one each).
    PipeStreams::ComputeScope onCompute(*config_.streams, op.j);
    run();
  };
  try {
    runDeviceOps(core_, *config_.core.schedule, d, hooks);
  } catch (const StepAborted&) {
    // another worker failed first
  } catch (...) {
    fail(std::current_exception());
  }
}

void ThreadedStep::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!error_) error_ = std::move(error);
  }
  channel_.abandon();
}

std::vector<Tensors> ThreadedStep::lastOutputs() const {
  const std::int64_t last = config_.core.schedule->stages() - 1;
  std::vector<Tensors> outputs;
  for (std::int64_t i = 0; i < m(); ++i) {
    // Ready on the caller's streams (the phase joined them); in use there from now on.
    outputs.push_back(config_.streams->accept({core_.lastOutputs(i), nullptr}, last));
  }
  return outputs;
}

std::vector<Tensors> ThreadedStep::inputGrads() const {
  std::vector<Tensors> grads;
  for (std::int64_t i = 0; i < m(); ++i) grads.push_back(channel_.inputGrads(i));
  return grads;
}

torch::Tensor ThreadedStep::lossSum() const {
  const std::int64_t last = config_.core.schedule->stages() - 1;
  const Tensors values = config_.streams->accept({core_.lossValues(), nullptr}, last);
  torch::NoGradGuard noGrad;
  return torch::stack(values).sum();
}

void ThreadedStep::rethrowIfFailed() const {
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadedStep::release() {
  core_.release();
  channel_.release();
}

}  // namespace pipeprof
