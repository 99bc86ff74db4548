// The threaded Pipe's step: each device's worker runs its stages' ops on the shared stage core.
#include "threaded/pipeline.h"

#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/pipe_error.h>

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

Step::Step(StepConfig config, std::vector<Tensors> microBatches, std::vector<torch::Tensor> targets)
    : config_(std::move(config)),
      channel_(*config_.core.schedule, *config_.streams, config_.core.tracer, config_.core.traceDevices),
      core_(config_.core, channel_, &channel_, std::move(microBatches), std::move(targets)) {}

void Step::run(std::int64_t d, StepPhase phase) {
  // Everything the worker allocates counts against its device, whichever stage it runs.
  ScopedAllocationTag tag(d);
  const AutocastScope autocast = core_.autocastFor(d);
  const Schedule& schedule = *config_.core.schedule;
  for (OpIndex index : schedule.deviceOrder(d)) {
    const Op& op = schedule.op(index);
    if (!op.isCompute() || !inPhase(op.kind, phase) || (op.kind == OpKind::Loss && config_.core.lossFn == nullptr)) {
      continue;
    }
    if (channel_.abandoned()) return;
    try {
      // Each op runs on its own stage's compute stream (a device's stages have one each).
      PipeStreams::ComputeScope onCompute(*config_.streams, op.j);
      core_.run(op);
    } catch (const StepAborted&) {
      return;
    } catch (...) {
      fail(op, std::current_exception());
      return;
    }
  }
}

void Step::fail(const Op& op, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!error_) {
      error_ = std::move(error);
      errorI_ = op.i;
      errorJ_ = op.j;
      errorWhere_ = opLocation(*config_.core.schedule, op);
    }
  }
  channel_.abandon();
}

std::vector<Tensors> Step::lastOutputs() const {
  const std::int64_t last = config_.core.schedule->partitions() - 1;
  std::vector<Tensors> outputs;
  for (std::int64_t i = 0; i < chunks(); ++i) {
    // Ready on the caller's streams (the phase joined them); in use there from now on.
    outputs.push_back(config_.streams->accept({core_.lastOutputs(i), nullptr}, last));
  }
  return outputs;
}

std::vector<Tensors> Step::inputGrads() const {
  std::vector<Tensors> grads;
  for (std::int64_t i = 0; i < chunks(); ++i) grads.push_back(channel_.inputGrads(i));
  return grads;
}

torch::Tensor Step::lossSum() const {
  const std::int64_t last = config_.core.schedule->partitions() - 1;
  const Tensors values = config_.streams->accept({core_.lossValues(), nullptr}, last);
  torch::NoGradGuard noGrad;
  return torch::stack(values).sum();
}

void Step::rethrowIfFailed() const {
  std::exception_ptr error;
  std::string where;
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!error_) return;
    error = error_;
    where = errorWhere_;
  }
  try {
    std::rethrow_exception(error);
  } catch (...) {
    throwPipeError(where, errorJ_, errorI_);
  }
}

void Step::release() {
  core_.release();
  channel_.release();
}

}  // namespace pipeprof
