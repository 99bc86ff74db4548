// The threaded measurer: a candidate trained on a fresh Pipe whose stages are threads of this process.
#include <pipeprof/tuner/candidate_measurer.h>

#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>

#include <algorithm>

namespace pipeprof::tuner {

std::unique_ptr<CuptiCollector> cuptiOnCuda(HostTracer& tracer, const std::vector<DeviceDesc>& devices) {
  const bool anyCuda =
      std::any_of(devices.begin(), devices.end(), [](const DeviceDesc& d) { return d.type == DeviceType::Cuda; });
  return anyCuda ? CuptiCollector::create(tracer, CuptiMode::Cheap) : nullptr;
}

ThreadedMeasurer::ThreadedMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, TrainingStepOptions step,
                                   CollectorFactory collectors)
    : model_(std::move(model)),
      devices_(std::move(devices)),
      step_(std::move(step)),
      makeCollector_(std::move(collectors)) {}

CuptiCollector* ThreadedMeasurer::keptCollector() {
  if (!collectorMade_) {
    collectorMade_ = true;
    if (makeCollector_) collector_ = makeCollector_(collectorTracer_, devices_);
  }
  return collector_.get();
}

MeasuredRun ThreadedMeasurer::measure(const Candidate& candidate, const MeasureRequest& request) {
  Model model = buildModel(model_);
  TrainingOptions options;
  static_cast<PipelineShape&>(options) = candidate;
  const std::vector<torch::Device> devices = torchDevices(devices_);
  for (std::int64_t d = 0; d < candidate.pipelineDevices(); ++d) {
    options.devices.push_back(devices.at(static_cast<std::size_t>(candidate.deviceOf(d))));
  }
  options.batch = candidate.batch;
  options.warmupSteps = request.warmupSteps;
  options.steps = request.steps;
  options.optimizer = step_.optimizer;
  options.precision = step_.precision;
  if (step_.cpuBinding == launch::CpuBinding::Cores) options.workerCpus = launch::cpuShares(options.devices.size());
  options.captureTrace = request.traced;
  if (request.traced) {
    options.collector = keptCollector();
  } else if (collector_) {
    collector_->stop();  // an untraced run is timed without CUPTI recording
  }
  options.stop = request.stop;
  // The pool streams earlier Pipes of this process used (the calibration's, the previous
  // candidate's) keep their cuBLAS workspaces, and this Pipe may get the same streams: free
  // them, so its peaks hold only the workspaces of its own stages (docs/simulator.md).
  clearLibraryWorkspaces(options.devices);
  TrainingResult result = trainAndMeasure(model, options);
  return {std::move(result.measurement), std::move(result.trace)};
}

}  // namespace pipeprof::tuner
