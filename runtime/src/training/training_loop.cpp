// The measured training loop: warm-up, timed SGD steps on a Pipe, peak memory and the trace.
#include <pipeprof/runtime/training_loop.h>

#include "training/cpu_wait.h"
#include "training/driving_thread.h"
#include "training/training_steps.h"

#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/pipe.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

namespace pipeprof {

namespace {

void synchronizeDevices(const std::vector<torch::Device>& devices) {
  for (const torch::Device& device : devices) {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }
}

}  // namespace

TrainingResult trainAndMeasure(Model& model, const TrainingOptions& options) {
  validateTrainingOptions(options);
  PipeOptions pipeOptions;
  static_cast<PipelineShape&>(pipeOptions) = options;
  pipeOptions.devices = options.devices;
  pipeOptions.precision = options.precision;
  pipeOptions.workerCpus = options.workerCpus;
  Pipe pipe(model.sequential, pipeOptions);
  pipe.train();
  const DrivingThreadAsBatch drivingAsBatch(!options.workerCpus.empty());

  const Batch batch = model.makeBatch(options.batch, options.dataSeed);
  const torch::Tensor input = batch.input.to(pipe.devices().front());
  // The loss runs on the last stage's device.
  const auto lastDevice = static_cast<std::size_t>(options.deviceOfStage(options.stages() - 1));
  const torch::Tensor target = batch.target.to(pipe.devices()[lastDevice]);
  const LossFn lossFn = model.loss;

  std::unique_ptr<HostTracer> tracer;
  std::unique_ptr<CuptiCollector> ownCollector;
  CuptiCollector* collector = nullptr;
  TrainingResult result;
  const bool onCuda =
      std::any_of(options.devices.begin(), options.devices.end(), [](const torch::Device& d) { return d.is_cuda(); });
  if (options.captureTrace) {
    tracer = std::make_unique<HostTracer>();
    if (options.collector != nullptr) {
      collector = options.collector;
      collector->setTracer(*tracer);
    } else if (onCuda) {
      ownCollector = CuptiCollector::create(*tracer, options.cuptiMode);
      collector = ownCollector.get();
    }
    if (collector != nullptr && !collector->start()) {
      result.collectorNote = collector->unavailableReason();
      collector = nullptr;
    }
    tracer->enable();
    pipe.setTracer(tracer.get());
  }
  // A kept collector must not follow this run's tracer past it, whatever ends the run.
  struct EndCapture {
    CuptiCollector*& collector;
    ~EndCapture() {
      if (collector != nullptr) collector->pause();
    }
  } endCapture{collector};

  Measurement& m = result.measurement;
  m.warmupSteps = options.warmupSteps;
  m.peakBytes.assign(pipe.devices().size(), 0);  // per pipeline device
  StepHooks hooks;
  hooks.beforeStep = [&] { synchronizeDevices(options.devices); };
  hooks.runStep = [&](double lossScale) { return pipe.step(input, target, lossFn, lossScale); };
  hooks.afterStep = hooks.beforeStep;
  bool waitsKnown = true;
  hooks.measured = [&](TimeNs stepNs, std::optional<TimeNs> cpuWaitNs) {
    m.stepNs.push_back(stepNs);
    waitsKnown = waitsKnown && cpuWaitNs.has_value();
    m.stepCpuWaitNs.push_back(cpuWaitNs.value_or(0));
    const std::vector<Bytes> peaks = pipe.peakBytes();
    for (std::size_t j = 0; j < peaks.size() && j < m.peakBytes.size(); ++j) {
      m.peakBytes[j] = std::max(m.peakBytes[j], peaks[j]);
    }
    const std::vector<std::optional<Bytes>> devicePeaks = pipe.devicePeakBytes();
    for (std::size_t j = 0; j < devicePeaks.size(); ++j) {
      if (!devicePeaks[j]) continue;
      Bytes& peak = result.devicePeakBytes[pipe.devices()[j].str()];
      peak = std::max(peak, *devicePeaks[j]);
    }
  };
  hooks.onEachDevice = [&](const std::function<void(std::int64_t)>& task) { pipe.onEachDevice(task); };
  hooks.cpuWaitNs = processCpuWaitNs;                   // the workers, and this thread handing them the ops
  hooks.anyProcess = [](bool found) { return found; };  // every device is this process's
  result.losses = runTrainingSteps(options, pipe.deviceParameters(), hooks, tracer.get(), "host");
  if (!waitsKnown) m.stepCpuWaitNs.clear();
  m.updateStatistics(options.batch);

  if (tracer) {
    pipe.setTracer(nullptr);
    tracer->disable();
    if (collector) collector->pause();  // its own one stops when it goes
    Trace host = tracer->drain();
    if (collector) {
      result.trace = mergeTraces(host, collector->trace(host));
      result.collectorNote = collector->summary();
    } else {
      result.trace = std::move(host);
    }
    result.trace.metadata["source"] = "measured";
  }
  return result;
}

}  // namespace pipeprof
