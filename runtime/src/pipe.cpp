// The GPipe Pipe: validation, partitions and workers, the forward step and its autograd node.
#include <pipeprof/runtime/pipe.h>

#include "device_memory.h"
#include "microbatch.h"
#include "partition.h"
#include "pipeline.h"
#include "rng.h"
#include "worker.h"

#include <pipeprof/runtime/deferred_batch_norm.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/skip.h>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <map>
#include <stdexcept>

namespace pipeprof {
namespace {

std::string traceDeviceName(const torch::Device& device, std::int64_t j) {
  // Each CPU partition has its own worker: the trace shows it as its own CPU device.
  if (device.is_cpu()) {
    return "cpu:" + std::to_string(j);
  }
  return device.str();
}

/// Replaces the BatchNorm layers by DeferredBatchNorm layers sharing their tensors. Throws
/// std::invalid_argument when a BatchNorm is nested inside a layer (it cannot be replaced).
torch::nn::Sequential withDeferredBatchNorm(const torch::nn::Sequential& module,
                                            std::vector<std::shared_ptr<DeferredBatchNormImpl>>& converted) {
  torch::nn::Sequential result;
  auto named = module->named_children();
  for (std::size_t index = 0; index < module->size(); ++index) {
    const auto& child = named[index].value();
    if (isBatchNorm(*child)) {
      auto deferred = std::make_shared<DeferredBatchNormImpl>(*child);
      deferred->train(child->is_training());
      converted.push_back(deferred);
      result->push_back(named[index].key(), torch::nn::AnyModule(deferred));
      continue;
    }
    for (const auto& descendant : child->modules(/*include_self=*/false)) {
      if (isBatchNorm(*descendant)) {
        throw std::invalid_argument("deferredBatchNorm converts only BatchNorm layers of the Sequential itself, but layer " +
                                    std::to_string(index) + " ('" + named[index].key() +
                                    "') contains a nested BatchNorm; make it a layer of its own or turn "
                                    "deferredBatchNorm off");
      }
    }
    result->push_back(named[index].key(), *std::next(module->begin(), static_cast<std::ptrdiff_t>(index)));
  }
  result->train(module->is_training());
  return result;
}

}  // namespace

class PipeBackward;

/// What the backward needs to know of a Pipe input (metadata only, no storage kept alive).
struct InputInfo {
  std::vector<std::int64_t> sizes;
  torch::TensorOptions options;
  bool requiresGrad = false;
  std::vector<std::int64_t> rows;  ///< per micro-batch
};

class PipeImpl {
 public:
  PipeImpl(torch::nn::Sequential module, std::vector<std::int64_t> balance, PipeOptions options)
      : module_(std::move(module)), balance_(std::move(balance)), options_(std::move(options)) {
    if (module_.is_empty()) {
      throw std::invalid_argument("the Pipe needs a Sequential module (got an empty holder)");
    }
    devices_ = resolveDevices(options_.devices, balance_.size());
    validatePipeArguments(module_, balance_, devices_.size(), options_.chunks);
    verifySkips(module_);
    devices_.resize(balance_.size(), devices_.empty() ? torch::Device(torch::kCPU) : devices_.back());
    options_.devices = devices_;
    installMemoryTracker();
    partitions_ = splitModule(module_, balance_, devices_);
    if (options_.deferredBatchNorm) {
      module_ = withDeferredBatchNorm(module_, deferredBatchNorms_);
      partitions_ = splitModule(module_, balance_, devices_);
    }
    for (const auto& partition : partitions_) {
      deviceNames_.push_back(traceDeviceName(partition.device, partition.j));
      workers_->push_back(std::make_unique<Worker>());
    }
    auto routes = skipRouteKeys(module_);
    scheduleSkips_ = skipRoutes(module_);  // same order as the keys, distinct names
    for (std::size_t s = 0; s < routes.size(); ++s) {
      routes_.push_back({routes[s].key, static_cast<std::int64_t>(s), partitionOf(routes[s].stashLayer),
                         partitionOf(routes[s].popLayer)});
    }
  }

  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& inputs);
  void runPhase(Step& step, bool backward);

  std::int64_t partitionOf(std::int64_t layer) const {
    for (const auto& partition : partitions_) {
      if (layer < partition.firstLayer + static_cast<std::int64_t>(partition.layers.size())) {
        return partition.j;
      }
    }
    return static_cast<std::int64_t>(partitions_.size()) - 1;
  }

  const Schedule& scheduleFor(std::int64_t m, bool gradEnabled, bool training) {
    const auto key = std::make_tuple(m, gradEnabled, training);
    auto it = schedules_.find(key);
    if (it == schedules_.end()) {
      ScheduleSpec spec;
      spec.balance = balance_;
      spec.chunks = m;
      spec.checkpoint = training ? options_.checkpoint : Checkpoint::Never;
      spec.training = gradEnabled;
      spec.skips = scheduleSkips_;
      it = schedules_.emplace(key, std::make_unique<Schedule>(Schedule::build(spec))).first;
    }
    return *it->second;
  }

  torch::nn::Sequential module_;
  std::vector<std::int64_t> balance_;
  PipeOptions options_;
  std::vector<torch::Device> devices_;
  std::vector<Partition> partitions_;
  std::vector<std::string> deviceNames_;
  /// Shared with the autograd nodes of pending steps, so a backward can run after the Pipe moved.
  std::shared_ptr<std::vector<std::unique_ptr<Worker>>> workers_ =
      std::make_shared<std::vector<std::unique_ptr<Worker>>>();
  std::vector<std::shared_ptr<DeferredBatchNormImpl>> deferredBatchNorms_;
  std::vector<PartitionSkipRoute> routes_;
  std::vector<SkipRoute> scheduleSkips_;
  std::map<std::tuple<std::int64_t, bool, bool>, std::unique_ptr<Schedule>> schedules_;
  HostTracer* tracer_ = nullptr;
};

namespace {

/// Runs worker j's ops of one phase on every worker and waits for all of them.
void runOnWorkers(std::vector<std::unique_ptr<Worker>>& workers, Step& step, bool backward) {
  if (workers.size() == 1) {
    // One partition has nothing to overlap with: run its ops on the calling thread, saving
    // the hand-off to the worker (the Pipe's overhead over the plain Sequential).
    if (backward) {
      step.runBackward(0);
    } else {
      step.runForward(0);
    }
    step.rethrowIfFailed();
    return;
  }
  std::vector<std::future<void>> done;
  // ATen's OpenMP thread count is per thread: workers adopt the caller's intra-op setting.
  const int intraOpThreads = at::get_num_threads();
  for (std::size_t j = 0; j < workers.size(); ++j) {
    const auto partition = static_cast<std::int64_t>(j);
    done.push_back(workers[j]->submit([&step, partition, backward, intraOpThreads] {
      if (at::get_num_threads() != intraOpThreads) {
        at::set_num_threads(intraOpThreads);
      }
      if (backward) {
        step.runBackward(partition);
      } else {
        step.runForward(partition);
      }
    }));
  }
  for (auto& future : done) {
    future.get();
  }
  step.rethrowIfFailed();
}

}  // namespace

/// The autograd node of a Pipe's output: its apply() receives the output gradient, splits it
/// per micro-batch and runs the backward ops on the partitions' workers, then returns the
/// gradients of the Pipe's inputs.
class PipeBackward : public torch::autograd::Node {
 public:
  PipeBackward(std::shared_ptr<Step> step, std::shared_ptr<std::vector<std::unique_ptr<Worker>>> workers,
               std::vector<std::vector<std::int64_t>> outputRows, std::vector<InputInfo> inputs)
      : step_(std::move(step)),
        workers_(std::move(workers)),
        outputRows_(std::move(outputRows)),
        inputs_(std::move(inputs)) {}

  std::string name() const override { return "pipeprof::PipeBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    std::shared_ptr<Step> step = std::move(step_);
    if (!step) {
      throw std::runtime_error("the Pipe's backward already ran for this output; call forward again");
    }
    const auto m = static_cast<std::size_t>(step->chunks());
    std::vector<Tensors> perMicroBatch(m);
    for (std::size_t k = 0; k < grads.size(); ++k) {
      if (!grads[k].defined()) {
        for (auto& microBatch : perMicroBatch) {
          microBatch.emplace_back();
        }
        continue;
      }
      auto pieces = grads[k].split_with_sizes(outputRows_.at(k), 0);
      for (std::size_t i = 0; i < m; ++i) {
        perMicroBatch[i].push_back(pieces[i]);
      }
    }
    step->setOutputGrads(std::move(perMicroBatch));
    runOnWorkers(*workers_, *step, /*backward=*/true);
    std::vector<Tensors> inputGrads = step->inputGrads();
    step->release();
    torch::autograd::variable_list result;
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      std::vector<torch::Tensor> pieces;
      bool any = false;
      for (std::size_t i = 0; i < m; ++i) {
        torch::Tensor grad = k < inputGrads[i].size() ? inputGrads[i][k] : torch::Tensor();
        any = any || grad.defined();
        pieces.push_back(grad);
      }
      if (!any || !inputs_[k].requiresGrad) {
        result.emplace_back();
        continue;
      }
      for (std::size_t i = 0; i < m; ++i) {
        if (!pieces[i].defined()) {
          auto shape = inputs_[k].sizes;
          shape[0] = inputs_[k].rows.at(i);
          pieces[i] = torch::zeros(shape, inputs_[k].options);
        }
      }
      result.push_back(m == 1 ? pieces.front() : torch::cat(pieces, 0));
    }
    return result;
  }

 protected:
  void release_variables() override { step_.reset(); }

 private:
  std::shared_ptr<Step> step_;
  std::shared_ptr<std::vector<std::unique_ptr<Worker>>> workers_;
  std::vector<std::vector<std::int64_t>> outputRows_;
  std::vector<InputInfo> inputs_;
};

void PipeImpl::runPhase(Step& step, bool backward) { runOnWorkers(*workers_, step, backward); }

std::vector<torch::Tensor> PipeImpl::forward(const std::vector<torch::Tensor>& inputs) {
  const torch::Device first = devices_.front();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined() && inputs[k].device() != first) {
      throw std::invalid_argument("input " + std::to_string(k) + " is on " + inputs[k].device().str() +
                                  " but the first partition is on " + first.str() + "; move the input there first");
    }
  }
  std::vector<Tensors> microBatches = scatter(inputs, options_.chunks);
  const bool gradEnabled = torch::GradMode::is_enabled();
  const bool training = module_->is_training() && gradEnabled;
  const auto m = static_cast<std::int64_t>(microBatches.size());

  StepConfig config;
  config.partitions = &partitions_;
  config.schedule = &scheduleFor(m, gradEnabled, training);
  config.routes = routes_;
  config.gradEnabled = gradEnabled;
  config.tracer = tracer_;
  config.deviceNames = deviceNames_;
  const bool stochastic =
      std::any_of(partitions_.begin(), partitions_.end(), [](const Partition& p) { return p.stochastic; });
  config.baseSeed = stochastic ? drawSeed() : 0;

  for (const auto& partition : partitions_) {
    resetPeakBytes(partition.j);
    resetDevicePeakBytes(partition.device);
  }
  for (const auto& batchNorm : deferredBatchNorms_) {
    batchNorm->resetStatistics();
  }
  auto step = std::make_shared<Step>(std::move(config), std::move(microBatches));
  runPhase(*step, /*backward=*/false);
  if (module_->is_training()) {
    for (const auto& batchNorm : deferredBatchNorms_) {
      batchNorm->commit();
    }
  }

  std::vector<Tensors> lastOutputs = step->lastOutputs();
  Tensors outputs;
  {
    torch::NoGradGuard noGrad;
    outputs = gather(lastOutputs);
    for (auto& output : outputs) {
      output = output.detach();  // a fresh tensor: the partition's own graph stays untouched
    }
  }
  if (!gradEnabled) {
    return outputs;
  }
  const bool parametersNeedGrad = std::any_of(partitions_.begin(), partitions_.end(), [](const Partition& p) {
    for (const auto& layer : p.layers) {
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
      inputInfos.push_back({inputs[k].sizes().vec(), inputs[k].options(), inputs[k].requires_grad(), rowsOf(chunks, k)});
    }
  }
  std::shared_ptr<PipeBackward> node(
      new PipeBackward(step, workers_, std::move(outputRows), std::move(inputInfos)),
      torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  for (auto& output : outputs) {
    if (output.is_floating_point() || output.is_complex()) {
      torch::autograd::create_gradient_edge(output, node);
    }
  }
  return outputs;
}

Pipe::Pipe(torch::nn::Sequential module, std::vector<std::int64_t> balance, PipeOptions options)
    : impl_(std::make_unique<PipeImpl>(std::move(module), std::move(balance), std::move(options))) {}

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

const std::vector<std::int64_t>& Pipe::balance() const { return impl_->balance_; }
const std::vector<torch::Device>& Pipe::devices() const { return impl_->devices_; }
const PipeOptions& Pipe::options() const { return impl_->options_; }
std::vector<torch::Tensor> Pipe::parameters() const { return impl_->module_->parameters(); }
torch::nn::Sequential Pipe::module() const { return impl_->module_; }

void Pipe::train(bool on) { impl_->module_->train(on); }
bool Pipe::isTraining() const { return impl_->module_->is_training(); }

std::vector<Bytes> Pipe::peakBytes() const {
  std::vector<Bytes> peaks;
  for (const auto& partition : impl_->partitions_) {
    // CUDA: the caching allocator's peak of the device (it includes the parameters).
    const std::optional<Bytes> devicePeak = devicePeakBytes(partition.device);
    peaks.push_back(devicePeak ? *devicePeak : partition.parameterBytes + pipeprof::peakBytes(partition.j));
  }
  return peaks;
}

void Pipe::resetPeakBytes() {
  for (const auto& partition : impl_->partitions_) {
    pipeprof::resetPeakBytes(partition.j);
    resetDevicePeakBytes(partition.device);
  }
}

void Pipe::setTracer(HostTracer* tracer) { impl_->tracer_ = tracer; }

}  // namespace pipeprof
