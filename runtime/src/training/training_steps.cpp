// The training step users run, written once for both training loops.
#include "training/training_steps.h"

#include "stage/autocast.h"
#include "training/make_optimizer.h"

#include <pipeprof/profiler/host_tracer.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

namespace pipeprof {
namespace {

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

}  // namespace

void zeroGradientsInPlace(const std::vector<torch::Tensor>& parameters) {
  for (const torch::Tensor& parameter : parameters) {
    torch::Tensor grad = parameter.grad();
    if (grad.defined()) grad.zero_();
  }
}

void validateTrainingOptions(const TrainingOptions& options) {
  if (options.steps <= 0) throw std::invalid_argument("steps must be positive, got " + std::to_string(options.steps));
  if (options.warmupSteps < 0) {
    throw std::invalid_argument("warm-up steps must not be negative, got " + std::to_string(options.warmupSteps));
  }
  if (options.batch <= 0) throw std::invalid_argument("batch must be positive, got " + std::to_string(options.batch));
  validateOptimizer(options.optimizer);
  for (const torch::Device& device : options.devices) validatePrecision(options.precision, device);
  if (options.chunks > options.batch) {
    throw std::invalid_argument("chunks (" + std::to_string(options.chunks) + ") must not exceed the batch (" +
                                std::to_string(options.batch) + "): every micro-batch needs a sample");
  }
}

std::vector<double> runTrainingSteps(const TrainingOptions& options,
                                     const std::vector<std::vector<torch::Tensor>>& parametersByDevice,
                                     const StepHooks& hooks, HostTracer* tracer, const std::string& traceDevice) {
  // One optimizer per device: every parameter's update depends on that parameter alone, so
  // stepping the devices apart updates exactly as one optimizer over all of them would.
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  for (const std::vector<torch::Tensor>& parameters : parametersByDevice) {
    optimizers.push_back(parameters.empty() ? nullptr : makeOptimizer(options.optimizer, parameters));
  }
  std::optional<GradScaler> scaler;
  if (options.gradScaler) {
    scaler.emplace(*options.gradScaler);
  } else if (options.precision == Precision::Fp16) {
    scaler.emplace();
  }
  std::vector<char> foundInf(parametersByDevice.size(), 0);
  std::vector<double> losses;
  const std::int64_t lastStep = options.warmupSteps + options.steps - 1;
  // Step `index` of the run, warm-up steps first.
  const auto step = [&](std::int64_t index, bool measured) {
    hooks.beforeStep();
    const std::optional<TimeNs> waitBeforeNs = measured ? hooks.cpuWaitNs() : std::nullopt;
    const TimeNs startNs = steadyNowNs();
    // The first step zeroes what an earlier run left; every later one finds its gradients zeroed
    // by the step before (below).
    if (index == 0) {
      for (const std::vector<torch::Tensor>& parameters : parametersByDevice) zeroGradientsInPlace(parameters);
    }
    const torch::Tensor loss = hooks.runStep(scaler ? scaler->scale() : 1.0);
    const TimeNs optimizerStartNs = steadyNowNs();
    bool skip = false;
    if (scaler) {
      hooks.onEachDevice([&](std::int64_t d) {
        const auto k = static_cast<std::size_t>(d);
        foundInf[k] = GradScaler::unscale(parametersByDevice[k], scaler->scale()) ? 1 : 0;
      });
      skip = hooks.anyProcess(std::find(foundInf.begin(), foundInf.end(), 1) != foundInf.end());
      scaler->update(skip);
    }
    // Each device zeroes its gradients for the next step on its own thread, right after its
    // optimizer read them (still in its caches), the devices at once; the last step leaves them
    // for the caller to read. docs/runtime.md, "The training step".
    const bool zeroForNext = index < lastStep;
    if (!skip || zeroForNext) {
      hooks.onEachDevice([&](std::int64_t d) {
        const auto k = static_cast<std::size_t>(d);
        if (const auto& optimizer = optimizers.at(k); optimizer && !skip) optimizer->step();
        if (zeroForNext) zeroGradientsInPlace(parametersByDevice[k]);
      });
    }
    hooks.afterStep();
    const TimeNs endNs = steadyNowNs();
    recordLoopSpan(tracer, traceDevice, Phase::Optimizer, "optimizer", optimizerStartNs, endNs);
    if (loss.defined()) losses.push_back(loss.item<double>());  // after the clock: reading it may synchronise
    if (measured) {
      const std::optional<TimeNs> waitAfterNs = hooks.cpuWaitNs();
      recordLoopSpan(tracer, traceDevice, Phase::Step, "step", startNs, endNs);
      hooks.measured(endNs - startNs,
                     waitBeforeNs && waitAfterNs ? std::optional<TimeNs>(*waitAfterNs - *waitBeforeNs) : std::nullopt);
    }
    if (options.stop.stopRequested()) throw TrainingStopped("stopped after a step on request");
  };
  const TimeNs warmupStartNs = steadyNowNs();
  for (std::int64_t s = 0; s < options.warmupSteps; ++s) step(s, false);
  if (options.warmupSteps > 0)
    recordLoopSpan(tracer, traceDevice, Phase::Warmup, "warmup", warmupStartNs, steadyNowNs());
  for (std::int64_t s = 0; s < options.steps; ++s) step(options.warmupSteps + s, true);
  return losses;
}

}  // namespace pipeprof
