// The sweep's multi-process measurer: each candidate trained by one process per pipeline device.
#include "process_measurer.h"

#include "run_plan.h"

#include <pipeprof/runtime/torch_environment.h>

namespace pipeprof::cli {

ProcessMeasurer::ProcessMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, std::chrono::milliseconds timeout)
    : model_(std::move(model)), devices_(std::move(devices)), timeout_(timeout) {}

tuner::MeasuredRun ProcessMeasurer::measure(const Candidate& candidate, const tuner::MeasureRequest& request) {
  RunFlags flags;
  flags.model.model = model_.name;
  flags.model.width = model_.options.width;
  flags.model.depth = model_.options.depth;
  flags.model.seed = model_.options.seed;
  flags.model.threads = model_.threads;
  flags.procs = static_cast<int>(candidate.pipelineDevices());
  flags.devices.clear();
  for (std::int64_t d = 0; d < candidate.pipelineDevices(); ++d) {
    flags.devices += (d > 0 ? "," : "") + devices_.at(static_cast<std::size_t>(d)).str();
  }
  flags.steps = request.steps;
  flags.warmup = request.warmupSteps;
  flags.timeoutS = static_cast<double>(timeout_.count()) / 1000.0;

  RunPlan plan;
  plan.candidate = candidate;
  plan.devices.assign(devices_.begin(), devices_.begin() + candidate.pipelineDevices());
  plan.options.devices = torchDevices(plan.devices);
  LaunchedRun launched = launchRun(flags, plan, request.traced, request.stop);  // TrainingStopped on request
  tuner::MeasuredRun run;
  run.measurement = std::move(launched.measurement);
  run.trace = std::move(launched.trace);
  return run;
}

}  // namespace pipeprof::cli
