// The Pipe: validation, stages on devices, workers and streams, forward() and step().
#include <pipeprof/runtime/pipe.h>

#include "memory/device_memory.h"
#include "stage/autocast.h"
#include "stage/microbatch.h"
#include "stage/stage.h"
#include "stage/stage_set.h"
#include "stage/step_setup.h"
#include "threaded/phase_run.h"
#include "threaded/pipe_backward.h"
#include "threaded/streams.h"
#include "threaded/threaded_step.h"
#include "threaded/worker.h"

#include <pipeprof/runtime/memory_tracker.h>

#include <ATen/Parallel.h>

#include <sched.h>

#include <algorithm>
#include <exception>
#include <future>
#include <stdexcept>

namespace pipeprof {

namespace {

std::string traceDeviceName(const torch::Device& device, std::int64_t d) {
  // Each CPU pipeline device has its own worker: the trace shows it as its own CPU device.
  if (device.is_cpu()) {
    return "cpu:" + std::to_string(d);
  }
  return device.str();
}

void checkWorkerCpus(const std::vector<std::vector<int>>& workerCpus, std::size_t p) {
  if (!workerCpus.empty() && workerCpus.size() != p) {
    throw std::invalid_argument("workerCpus holds " + std::to_string(workerCpus.size()) + " CPU list(s) for " +
                                std::to_string(p) + " pipeline devices: give one per device, or none");
  }
  for (const std::vector<int>& cpus : workerCpus) {
    for (const int cpu : cpus) {
      if (cpu < 0 || cpu >= CPU_SETSIZE) {
        throw std::invalid_argument("workerCpus names CPU " + std::to_string(cpu) + ": CPUs are numbered 0 to " +
                                    std::to_string(CPU_SETSIZE - 1));
      }
    }
  }
}

}  // namespace

class PipeImpl {
 public:
  PipeImpl(torch::nn::Sequential module, std::vector<std::int64_t> balance, PipeOptions options)
      : options_(std::move(options)), schedules_(options_, {}) {
    if (module.is_empty()) {
      throw std::invalid_argument("the Pipe needs a Sequential module (got an empty holder)");
    }
    options_.balance = std::move(balance);
    const auto p = static_cast<std::size_t>(options_.pipelineDevices());
    devices_ = resolveDevices(options_.devices, p);
    validatePipeArguments(module, options_, devices_.size());
    for (const torch::Device& device : devices_) validatePrecision(options_.precision, device);
    devices_.resize(p, devices_.empty() ? torch::Device(torch::kCPU) : devices_.back());
    options_.devices = devices_;
    stages_ = splitIntoStages(module, options_, options_.deferredBatchNorm, devices_);
    std::vector<torch::Device> stageDevices;
    std::vector<std::int64_t> memoryTags;
    for (const Stage& stage : stages_.stages) {
      deviceNames_.push_back(traceDeviceName(stage.device, stage.d));
      stageDevices.push_back(stage.device);
      memoryTags.push_back(stage.d);  // a device's stages count against one tag
    }
    checkWorkerCpus(options_.workerCpus, p);
    for (std::size_t d = 0; d < p; ++d) {
      workers_->push_back(
          std::make_unique<Worker>(options_.workerCpus.empty() ? std::vector<int>{} : options_.workerCpus[d]));
    }
    streams_ = std::make_unique<const PipeStreams>(std::move(stageDevices), std::move(memoryTags));
    schedules_ = ScheduleCache(options_, stages_.skips);
  }

  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& inputs);
  torch::Tensor step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn, double lossScale);

  void checkFirstDevice(const std::vector<torch::Tensor>& inputs) const {
    const torch::Device first = devices_.front();
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (inputs[k].defined() && inputs[k].device() != first) {
        throw std::invalid_argument("input " + std::to_string(k) + " is on " + inputs[k].device().str() +
                                    " but the first stage is on " + first.str() + "; move the input there first");
      }
    }
  }

  ThreadedStepConfig stepConfig(const Schedule& schedule, bool gradEnabled) const {
    ThreadedStepConfig config;
    config.core = stages_.coreConfig(options_.stages(), options_.precision);
    config.core.schedule = &schedule;
    config.core.gradEnabled = gradEnabled;
    config.core.baseSeed = stepSeed(stages_.stochastic);
    config.core.tracer = tracer_;
    config.core.traceDevices = deviceNames_;
    config.streams = streams_.get();
    config.intraOpThreads = at::get_num_threads();
    return config;
  }

  /// Before a step: the stages' memory windows and deferred statistics, and the streams' memory
  /// attribution (pool streams may have served another Pipe since the last step).
  void beginStep() {
    streams_->attributeMemory();
    stages_.beginStep();
  }

  bool isTraining() const { return stages_.module->is_training(); }

  PipeOptions options_;  ///< its balance, and its devices resolved
  std::vector<torch::Device> devices_;
  StageSet stages_;
  std::vector<std::string> deviceNames_;  ///< per stage: its pipeline device's trace name
  /// Shared with the autograd nodes of pending steps, so a backward can run after the Pipe moved.
  std::shared_ptr<Workers> workers_ = std::make_shared<Workers>();
  std::unique_ptr<const PipeStreams> streams_;
  ScheduleCache schedules_;
  HostTracer* tracer_ = nullptr;
};

std::vector<torch::Tensor> PipeImpl::forward(const std::vector<torch::Tensor>& inputs) {
  checkFirstDevice(inputs);
  const bool gradEnabled = torch::GradMode::is_enabled();
  const bool trainsWithGrad = isTraining() && gradEnabled;
  if (trainsWithGrad && options_.schedule != ScheduleKind::GPipe) {
    throw std::invalid_argument("the " + scheduleKindName(options_.schedule) +
                                " schedule interleaves forwards and backwards, which forward() + backward() cannot "
                                "do: train with step(input, target, lossFn); forward() runs this Pipe only in eval "
                                "mode or without gradients (torch::NoGradGuard)");
  }
  std::vector<Tensors> microBatches = scatter(inputs, options_.chunks);
  const auto m = static_cast<std::int64_t>(microBatches.size());
  checkMicroBatches(options_, m, inputs.front().size(0));

  ThreadedStepConfig config = stepConfig(schedules_.get(m, gradEnabled, trainsWithGrad), gradEnabled);
  beginStep();
  auto step = std::make_shared<ThreadedStep>(std::move(config), std::move(microBatches));
  streams_->fork();  // the workers' streams start after the caller's work on inputs and parameters
  PhaseRun forwardRun(workers_, step, StepPhase::Forward);
  forwardRun.start();
  forwardRun.finish();
  stages_.endStep(isTraining());

  std::vector<Tensors> lastOutputs = step->lastOutputs();
  Tensors outputs;
  {
    torch::NoGradGuard noGrad;
    outputs = gather(lastOutputs);
    for (auto& output : outputs) {
      output = output.detach();  // a fresh tensor: the stage's own graph stays untouched
    }
  }
  if (!gradEnabled) {
    return outputs;
  }
  const bool parametersNeedGrad = std::any_of(stages_.stages.begin(), stages_.stages.end(), [](const Stage& stage) {
    for (const auto& layer : stage.layers) {
      for (const auto& parameter : layer.ptr()->parameters()) {
        if (parameter.requires_grad()) {
          return true;
        }
      }
    }
    return false;
  });
  const bool inputsNeedGrad =
      std::any_of(inputs.begin(), inputs.end(), [](const torch::Tensor& t) { return t.requires_grad(); });
  if (!parametersNeedGrad && !inputsNeedGrad) {
    return outputs;
  }
  std::vector<std::vector<std::int64_t>> outputRows;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    outputRows.push_back(rowsOf(lastOutputs, k));
  }
  lastOutputs.clear();
  std::vector<InputInfo> inputInfos;
  {
    std::vector<Tensors> chunks = scatter(inputs, options_.chunks);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      inputInfos.push_back(
          {inputs[k].sizes().vec(), inputs[k].options(), inputs[k].requires_grad(), rowsOf(chunks, k)});
    }
  }
  connectBackward(outputs, inputs, std::make_shared<PhaseRun>(workers_, std::move(step), StepPhase::Backward),
                  std::move(outputRows), std::move(inputInfos));
  return outputs;
}

torch::Tensor PipeImpl::step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn,
                             double lossScale) {
  if (!lossFn) {
    throw std::invalid_argument("step() needs a loss function (got an empty LossFn)");
  }
  checkFirstDevice({input});
  SplitBatch batch = splitStepBatch(options_, input, target);
  const auto m = static_cast<std::int64_t>(batch.inputs.size());

  // The whole step trains, whatever the caller's grad mode (one device runs on this thread).
  torch::AutoGradMode gradMode(true);
  ThreadedStepConfig config = stepConfig(schedules_.get(m, true, isTraining()), true);
  config.core.lossFn = &lossFn;
  config.core.lossScale = lossScale;
  config.core.batchRows = batch.rows;
  // On the caller's current stream of the last device: fork() orders the workers after it.
  const torch::Device last = stages_.stages.back().device;
  for (torch::Tensor& piece : batch.targets) piece = piece.to(last);
  beginStep();
  auto step = std::make_shared<ThreadedStep>(std::move(config), std::move(batch.inputs), std::move(batch.targets));
  streams_->fork();
  PhaseRun run(workers_, step, StepPhase::Training);
  run.start();
  try {
    run.finish();
  } catch (...) {
    step->release();
    throw;
  }
  stages_.endStep(isTraining());  // every forward of the step has run
  torch::Tensor loss = step->lossSum();
  step->release();
  return loss;
}

Pipe::Pipe(torch::nn::Sequential module, std::vector<std::int64_t> balance, PipeOptions options)
    : impl_(std::make_unique<PipeImpl>(std::move(module), std::move(balance), std::move(options))) {}

Pipe::Pipe(torch::nn::Sequential module, PipeOptions options)
    : impl_(std::make_unique<PipeImpl>(std::move(module), options.balance, options)) {}

Pipe::~Pipe() = default;
Pipe::Pipe(Pipe&&) noexcept = default;
Pipe& Pipe::operator=(Pipe&&) noexcept = default;

torch::Tensor Pipe::forward(const torch::Tensor& input) {
  std::vector<torch::Tensor> outputs = impl_->forward({input});
  if (outputs.size() != 1) {
    throw std::invalid_argument("the last layer returned " + std::to_string(outputs.size()) +
                                " tensors; call forward(std::vector<torch::Tensor>) to get all of them");
  }
  return outputs.front();
}

std::vector<torch::Tensor> Pipe::forward(const std::vector<torch::Tensor>& inputs) { return impl_->forward(inputs); }

torch::Tensor Pipe::step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn,
                         double lossScale) {
  return impl_->step(input, target, lossFn, lossScale);
}

const std::vector<std::int64_t>& Pipe::balance() const { return impl_->options_.balance; }
const std::vector<torch::Device>& Pipe::devices() const { return impl_->devices_; }
const PipeOptions& Pipe::options() const { return impl_->options_; }
std::vector<torch::Tensor> Pipe::parameters() const { return impl_->stages_.module->parameters(); }

std::vector<std::vector<torch::Tensor>> Pipe::deviceParameters() const {
  std::vector<std::vector<torch::Tensor>> byDevice(impl_->devices_.size());
  for (const Stage& stage : impl_->stages_.stages) {
    std::vector<torch::Tensor>& own = byDevice[static_cast<std::size_t>(stage.d)];
    own.insert(own.end(), stage.parameters.begin(), stage.parameters.end());
  }
  return byDevice;
}

void Pipe::onEachDevice(const std::function<void(std::int64_t d)>& task) {
  // On CUDA the task runs on the compute stream of the device's first stage, whose blocks count
  // against the device (the optimizer's state is the device's like its gradients).
  std::vector<std::int64_t> firstStage(impl_->devices_.size(), -1);
  const std::vector<Stage>& stages = impl_->stages_.stages;
  for (std::size_t j = stages.size(); j-- > 0;) {
    firstStage[static_cast<std::size_t>(stages[j].d)] = static_cast<std::int64_t>(j);
  }
  const auto runOn = [&task, &firstStage, this](std::int64_t d) {
    ScopedAllocationTag tag(d);
    const PipeStreams::InOrderComputeScope onDevice(*impl_->streams_, firstStage[static_cast<std::size_t>(d)]);
    task(d);
  };
  Workers& workers = *impl_->workers_;
  if (workers.size() == 1) {
    runOn(0);
    return;
  }
  std::vector<std::future<void>> done;
  for (std::size_t d = 0; d < workers.size(); ++d) {
    done.push_back(workers[d]->submit([&runOn, d] { runOn(static_cast<std::int64_t>(d)); }));
  }
  std::exception_ptr first;
  for (auto& future : done) {
    try {
      future.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}
torch::nn::Sequential Pipe::module() const { return impl_->stages_.module; }

void Pipe::train(bool on) { impl_->stages_.module->train(on); }
bool Pipe::isTraining() const { return impl_->isTraining(); }

std::vector<Bytes> Pipe::peakBytes() const {
  std::vector<Bytes> peaks;
  for (std::size_t d = 0; d < impl_->devices_.size(); ++d) {
    // What the device's worker allocated for all its stages (its CPU tensors, or its stages'
    // streams' CUDA blocks) on top of its stages' parameters.
    peaks.push_back(impl_->stages_.deviceParameterBytes[d] + pipeprof::peakBytes(static_cast<std::int64_t>(d)));
  }
  return peaks;
}

std::vector<std::optional<Bytes>> Pipe::devicePeakBytes() const {
  std::vector<std::optional<Bytes>> peaks;
  for (const auto& device : impl_->devices_) peaks.push_back(pipeprof::devicePeakBytes(device));
  return peaks;
}

void Pipe::resetPeakBytes() {
  for (std::size_t d = 0; d < impl_->devices_.size(); ++d) {
    pipeprof::resetPeakBytes(static_cast<std::int64_t>(d));
    resetDevicePeakBytes(impl_->devices_[d]);
  }
}

void Pipe::setTracer(HostTracer* tracer) { impl_->tracer_ = tracer; }

}  // namespace pipeprof
