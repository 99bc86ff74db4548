// The training step users run, written once for both training loops.
#include "training_steps.h"

#include <pipeprof/profiler/host_tracer.h>

#include <chrono>
#include <memory>
#include <stdexcept>

namespace pipeprof {
namespace {

TimeNs steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A loop span on `device`: warm-up and step on lane "host", the optimizer (inside a step) on
/// lane "optimizer", so spans on a lane never overlap.
void recordLoopSpan(HostTracer* tracer, const std::string& device, Phase phase, const std::string& name, TimeNs startNs,
                    TimeNs endNs) {
  if (tracer == nullptr) return;
  TraceEvent event;
  event.kind = EventKind::Span;
  event.phase = phase;
  event.name = name;
  event.device = device;
  event.lane = phase == Phase::Optimizer ? "optimizer" : "host";
  event.startNs = startNs;
  event.durationNs = endNs - startNs;
  tracer->record(std::move(event));
}

/// The optimizer of `spec` over `parameters`; its state is created at its first step.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const OptimizerSpec& spec,
                                                       const std::vector<torch::Tensor>& parameters) {
  const double decay = spec.effectiveWeightDecay();
  switch (spec.kind) {
    case OptimizerKind::Sgd:
      return std::make_unique<torch::optim::SGD>(parameters,
                                                 torch::optim::SGDOptions(spec.learningRate).weight_decay(decay));
    case OptimizerKind::Momentum:
      return std::make_unique<torch::optim::SGD>(
          parameters, torch::optim::SGDOptions(spec.learningRate).momentum(spec.momentum).weight_decay(decay));
    case OptimizerKind::Adam:
      return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(spec.learningRate)
                                                                  .betas(std::make_tuple(spec.beta1, spec.beta2))
                                                                  .eps(spec.eps)
                                                                  .weight_decay(decay));
    case OptimizerKind::AdamW:
      return std::make_unique<torch::optim::AdamW>(parameters, torch::optim::AdamWOptions(spec.learningRate)
                                                                   .betas(std::make_tuple(spec.beta1, spec.beta2))
                                                                   .eps(spec.eps)
                                                                   .weight_decay(decay));
  }
  throw std::invalid_argument("unknown optimizer kind");
}

void zeroGradientsInPlace(const std::vector<torch::Tensor>& parameters) {
  for (const torch::Tensor& parameter : parameters) {
    torch::Tensor grad = parameter.grad();
    if (grad.defined()) grad.zero_();
  }
}

}  // namespace

void validateTrainingOptions(const TrainingOptions& options) {
  if (options.steps <= 0) throw std::invalid_argument("steps must be positive, got " + std::to_string(options.steps));
  if (options.warmupSteps < 0) {
    throw std::invalid_argument("warm-up steps must not be negative, got " + std::to_string(options.warmupSteps));
  }
  if (options.batch <= 0) throw std::invalid_argument("batch must be positive, got " + std::to_string(options.batch));
  validateOptimizer(options.optimizer);
  if (options.chunks > options.batch) {
    throw std::invalid_argument("chunks (" + std::to_string(options.chunks) + ") must not exceed the batch (" +
                                std::to_string(options.batch) + "): every micro-batch needs a sample");
  }
}

std::vector<double> runTrainingSteps(const TrainingOptions& options, const std::vector<torch::Tensor>& parameters,
                                     const StepHooks& hooks, HostTracer* tracer, const std::string& traceDevice) {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (!parameters.empty()) optimizer = makeOptimizer(options.optimizer, parameters);
  std::vector<double> losses;
  const auto step = [&](bool measured) {
    hooks.beforeStep();
    const TimeNs startNs = steadyNowNs();
    zeroGradientsInPlace(parameters);
    const torch::Tensor loss = hooks.runStep();
    const TimeNs optimizerStartNs = steadyNowNs();
    if (optimizer) optimizer->step();
    hooks.afterStep();
    const TimeNs endNs = steadyNowNs();
    recordLoopSpan(tracer, traceDevice, Phase::Optimizer, "optimizer", optimizerStartNs, endNs);
    if (loss.defined()) losses.push_back(loss.item<double>());  // after the clock: reading it may synchronise
    if (measured) {
      recordLoopSpan(tracer, traceDevice, Phase::Step, "step", startNs, endNs);
      hooks.measured(endNs - startNs);
    }
    if (options.stop.stopRequested()) throw TrainingStopped("stopped after a step on request");
  };
  const TimeNs warmupStartNs = steadyNowNs();
  for (std::int64_t s = 0; s < options.warmupSteps; ++s) step(false);
  if (options.warmupSteps > 0)
    recordLoopSpan(tracer, traceDevice, Phase::Warmup, "warmup", warmupStartNs, steadyNowNs());
  for (std::int64_t s = 0; s < options.steps; ++s) step(true);
  return losses;
}

}  // namespace pipeprof
