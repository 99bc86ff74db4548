// The measured training loop: warm-up, timed SGD steps on a Pipe, peak memory and the trace.
#include <pipeprof/runtime/training_loop.h>

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
  if (options.chunks > options.batch) {
    throw std::invalid_argument("chunks (" + std::to_string(options.chunks) + ") must not exceed the batch (" +
                                std::to_string(options.batch) + "): every micro-batch needs a sample");
  }
}

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

TrainingResult trainAndMeasure(Model& model, const TrainingOptions& options) {
  validateTrainingOptions(options);
  PipeOptions pipeOptions;
  static_cast<PipelineShape&>(pipeOptions) = options;
  pipeOptions.devices = options.devices;
  Pipe pipe(model.sequential, pipeOptions);
  pipe.train();

  const Batch batch = model.makeBatch(options.batch, options.dataSeed);
  const torch::Tensor input = batch.input.to(pipe.devices().front());
  // The loss runs on the last stage's device: stage n - 1 on pipeline device (n - 1) mod p.
  const std::size_t lastDevice = (options.balance.size() - 1) % pipe.devices().size();
  const torch::Tensor target = batch.target.to(pipe.devices()[lastDevice]);
  const LossFn lossFn = model.loss;
  const std::vector<torch::Tensor> parameters = pipe.parameters();
  torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(options.learningRate));

  std::unique_ptr<HostTracer> tracer;
  std::unique_ptr<CuptiCollector> collector;
  TrainingResult result;
  const bool onCuda = std::any_of(options.devices.begin(), options.devices.end(),
                                  [](const torch::Device& d) { return d.is_cuda(); });
  if (options.captureTrace) {
    tracer = std::make_unique<HostTracer>();
    if (onCuda) {
      collector = CuptiCollector::create(*tracer, options.cuptiMode);
      if (!collector->start()) {
        result.collectorNote = collector->unavailableReason();
        collector.reset();
      }
    }
    tracer->enable();
    pipe.setTracer(tracer.get());
  }

  using Clock = std::chrono::steady_clock;
  auto step = [&](bool measured) -> TimeNs {
    synchronizeDevices(options.devices);
    const TimeNs startNs = tracer ? tracer->nowNs() : 0;
    const auto start = Clock::now();
    zeroGradientsInPlace(parameters);
    const torch::Tensor loss = pipe.step(input, target, lossFn);
    const TimeNs optimizerStartNs = tracer ? tracer->nowNs() : 0;
    optimizer.step();
    synchronizeDevices(options.devices);
    const auto end = Clock::now();
    if (tracer) {
      const TimeNs endNs = tracer->nowNs();
      recordLoopSpan(tracer.get(), "host", Phase::Optimizer, "optimizer", optimizerStartNs, endNs);
      if (measured) recordLoopSpan(tracer.get(), "host", Phase::Step, "step", startNs, endNs);
    }
    result.losses.push_back(loss.item<double>());  // after the clock: reading it may synchronise
    if (options.stop.stopRequested()) throw TrainingStopped("stopped after a step on request");
    return std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
  };

  const TimeNs warmupStartNs = tracer ? tracer->nowNs() : 0;
  for (std::int64_t s = 0; s < options.warmupSteps; ++s) step(false);
  if (tracer && options.warmupSteps > 0) {
    recordLoopSpan(tracer.get(), "host", Phase::Warmup, "warmup", warmupStartNs, tracer->nowNs());
  }

  Measurement& m = result.measurement;
  m.warmupSteps = options.warmupSteps;
  m.peakBytes.assign(pipe.devices().size(), 0);  // per pipeline device
  for (std::int64_t s = 0; s < options.steps; ++s) {
    m.stepNs.push_back(step(true));
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
  }
  m.updateStatistics(options.batch);

  if (tracer) {
    pipe.setTracer(nullptr);
    tracer->disable();
    if (collector) collector->stop();
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
