// One rank of a multi-process pipeline: its stages, the shapes agreed at set-up, and its steps.
#include <pipeprof/runtime/stage_runtime.h>

#include "microbatch.h"
#include "partition.h"
#include "rng.h"
#include "stage_messages.h"
#include "stage_step.h"

#include <pipeprof/runtime/deferred_batch_norm.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/rank_environment.h>
#include <pipeprof/runtime/skip.h>

#include <algorithm>
#include <map>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

namespace pipeprof {
namespace {

/// A skip tracker for the set-up pass: it passes shapes instead of tensors.
class ShapeTracker final : public SkipTracker {
 public:
  using Stash = std::function<void(const PartitionSkipRoute&, const torch::Tensor&)>;
  using Pop = std::function<torch::Tensor(const PartitionSkipRoute&)>;

  ShapeTracker(const std::vector<PartitionSkipRoute>& routes, std::int64_t j, Stash stash, Pop pop)
      : routes_(routes), j_(j), stash_(std::move(stash)), pop_(std::move(pop)) {}

  void stash(const SkipKey& key, torch::Tensor tensor) override {
    if (const PartitionSkipRoute* route = crossRoute(routes_, key, j_, /*stashing=*/true)) {
      stash_(*route, tensor);
      return;
    }
    local_[key] = std::move(tensor);
  }

  torch::Tensor pop(const SkipKey& key) override {
    auto local = local_.find(key);
    if (local != local_.end()) return local->second;
    if (const PartitionSkipRoute* route = crossRoute(routes_, key, j_, /*stashing=*/false)) return pop_(*route);
    throw std::runtime_error("skip '" + key.second + "' was popped before it was stashed");
  }

 private:

  const std::vector<PartitionSkipRoute>& routes_;
  std::int64_t j_;
  Stash stash_;
  Pop pop_;
  std::map<SkipKey, torch::Tensor> local_;
};

Tensors zerosOf(const TensorSpecs& specs, const torch::Device& device) {
  Tensors tensors;
  for (const TensorSpec& spec : specs) {
    tensors.push_back(torch::zeros(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(device)));
  }
  return tensors;
}

}  // namespace

class StageRuntimeImpl {
 public:
  StageRuntimeImpl(torch::nn::Sequential module, StageOptions options, Transport& transport)
      : options_(std::move(options)), mailbox_(transport) {
    if (module.is_empty()) throw std::invalid_argument("the stage runtime needs a Sequential module (got an empty holder)");
    const std::int64_t v = options_.stagesPerDevice;
    const auto n = static_cast<std::int64_t>(options_.balance.size());
    p_ = options_.pipelineDevices();
    validatePipeArguments(module, options_.balance, static_cast<std::size_t>(p_), options_.chunks, options_.schedule, v);
    verifySkips(module);
    if (transport.worldSize() != p_) {
      throw std::invalid_argument("the balance has " + std::to_string(n) + " stages on " + std::to_string(p_) +
                                  " pipeline devices (" + std::to_string(v) + " per device), but the world has " +
                                  std::to_string(transport.worldSize()) + " ranks: run one rank per pipeline device");
    }
    rank_ = transport.rank();
    for (const auto& child : module->children()) stochastic_ = stochastic_ || isStochastic(*child);
    routes_ = partitionSkipRoutes(module, options_.balance);
    scheduleSkips_ = skipRoutes(module);
    if (options_.deferredBatchNorm) {
      std::vector<std::shared_ptr<DeferredBatchNormImpl>> converted;
      module = withDeferredBatchNorm(module, converted);
    }
    training_ = module->is_training();
    installMemoryTracker();
    // Other ranks' stages stay on the CPU and are dropped with `module` when this returns.
    std::vector<torch::Device> devices(static_cast<std::size_t>(p_), torch::Device(torch::kCPU));
    devices[static_cast<std::size_t>(rank_)] = options_.device;
    for (Partition& partition : splitModule(module, options_.balance, devices)) {
      if (partition.d != rank_) continue;
      parameterBytes_ += partition.parameterBytes;
      for (std::size_t k = 0; k < partition.layers.size(); ++k) {
        for (const auto& named : partition.layers[k].ptr()->named_parameters()) {
          parameterNames_.push_back(partition.names[k] + "." + named.key());
          parameters_.push_back(named.value());
        }
        for (const auto& child : partition.layers[k].ptr()->modules(/*include_self=*/true)) {
          if (auto deferred = std::dynamic_pointer_cast<DeferredBatchNormImpl>(child)) deferredBatchNorms_.push_back(deferred);
        }
      }
      partitions_.push_back(std::move(partition));
    }
    context_.device = options_.device;
    context_.deviceName = rankLabel(rank_, options_.device.str());
    context_.routes = routes_;
    context_.mailbox = &mailbox_;
    context_.memoryTag = rank_;
    context_.parameterBytes = parameterBytes_;
    for (const Partition& partition : partitions_) context_.partitions[partition.j] = &partition;
  }

  torch::Tensor step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn, std::uint64_t seed) {
    if (!lossFn) throw std::invalid_argument("step() needs a loss function (got an empty LossFn)");
    if (!input.defined() || input.dim() == 0 || !target.defined() || target.dim() == 0) {
      throw std::invalid_argument("step() needs an input and a target with a batch dimension (dim 0) on every rank");
    }
    const std::int64_t rows = input.size(0);
    if (target.size(0) != rows) {
      throw std::invalid_argument("the target must have the input's rows along dim 0 (input: " + std::to_string(rows) +
                                  " rows, target: " + std::to_string(target.size(0)) + ")");
    }
    std::vector<Tensors> microBatches = scatter({input}, options_.chunks);
    const auto m = static_cast<std::int64_t>(microBatches.size());
    const std::string shape = scheduleShapeError(options_.schedule, options_.stagesPerDevice,
                                                 static_cast<std::int64_t>(options_.balance.size()), m);
    if (!shape.empty()) {
      throw std::invalid_argument("a batch of " + std::to_string(rows) + " rows in " + std::to_string(options_.chunks) +
                                  " chunks splits into " + std::to_string(m) +
                                  " micro-batches (as torch.chunk does), which the schedule cannot run: " + shape);
    }
    const std::vector<std::int64_t> microRows = rowsOf(microBatches, 0);
    const bool first = context_.partitions.count(0) > 0;
    if (first) {
      for (Tensors& microBatch : microBatches) microBatch.front() = microBatch.front().to(options_.device);
    }
    prepare(m);
    if (agreedRows_.count(microRows) == 0) {
      agreeShapes(microBatches, microRows);
      agreedRows_.insert(microRows);
    }
    std::vector<torch::Tensor> targets;
    if (context_.partitions.count(static_cast<std::int64_t>(options_.balance.size()) - 1) > 0) {
      for (const auto& piece : scatter({target}, options_.chunks)) targets.push_back(piece.front().to(options_.device));
    }
    if (!first) microBatches.assign(static_cast<std::size_t>(m), Tensors{});
    resetPeakBytes(rank_);
    for (const auto& batchNorm : deferredBatchNorms_) batchNorm->resetStatistics();
    RankStep step(context_, std::move(microBatches), std::move(targets), microRows, lossFn, rows, seed);
    ++context_.stepIndex;
    step.run();
    if (training_) {
      for (const auto& batchNorm : deferredBatchNorms_) batchNorm->commit();
    }
    return step.lossSum();
  }

  std::uint64_t stepSeed() const { return stochastic_ ? drawSeed() : 0; }

  std::vector<std::int64_t> stages() const {
    std::vector<std::int64_t> stages;
    for (const Partition& partition : partitions_) stages.push_back(partition.j);
    return stages;
  }

  void train(bool on) {
    training_ = on;
    for (Partition& partition : partitions_) {
      for (auto& layer : partition.layers) layer.ptr()->train(on);
    }
  }

  StageOptions options_;
  Mailbox mailbox_;
  std::int64_t p_ = 1;
  int rank_ = 0;
  bool stochastic_ = false;
  bool training_ = true;
  std::vector<PartitionSkipRoute> routes_;
  std::vector<SkipRoute> scheduleSkips_;
  std::vector<Partition> partitions_;
  std::vector<std::shared_ptr<DeferredBatchNormImpl>> deferredBatchNorms_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::string> parameterNames_;
  Bytes parameterBytes_ = 0;
  StageContext context_;
  AgreedShapes shapes_;
  std::set<std::vector<std::int64_t>> agreedRows_;
  std::map<std::int64_t, std::unique_ptr<Schedule>> schedules_;  ///< by m
  std::map<std::int64_t, std::unique_ptr<MessageTags>> tags_;    ///< by m

 private:
  /// Points the context at the schedule and tags of m micro-batches.
  void prepare(std::int64_t m) {
    auto schedule = schedules_.find(m);
    if (schedule == schedules_.end()) {
      ScheduleSpec spec;
      static_cast<PipelineShape&>(spec) = options_;
      spec.chunks = m;
      spec.training = true;
      spec.skips = scheduleSkips_;
      schedule = schedules_.emplace(m, std::make_unique<Schedule>(Schedule::build(spec))).first;
      tags_.emplace(m, std::make_unique<MessageTags>(static_cast<std::int64_t>(options_.balance.size()), m,
                                                     static_cast<std::int64_t>(scheduleSkips_.size())));
    }
    context_.schedule = schedule->second.get();
    context_.tags = tags_.at(m).get();
    context_.shapes = &shapes_;
  }

  /// Runs every own stage once per distinct micro-batch size, in stage order, receiving the
  /// shapes of its inputs and sending those of its outputs (see stage_runtime.h).
  void agreeShapes(const std::vector<Tensors>& microBatches, const std::vector<std::int64_t>& rows) {
    const MessageTags& tags = *context_.tags;
    const TensorSpec headerSpec{{specHeaderLength()}, torch::kLong};
    const auto n = static_cast<std::int64_t>(options_.balance.size());
    torch::NoGradGuard noGrad;
    const bool wasTraining = training_;
    train(false);
    std::vector<std::int64_t> distinct;
    try {
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::int64_t r = rows[i];
        if (std::find(distinct.begin(), distinct.end(), r) != distinct.end()) continue;
        const auto ri = static_cast<std::int64_t>(distinct.size());
        distinct.push_back(r);
        for (const Partition& partition : partitions_) {
          const std::int64_t j = partition.j;
          Tensors inputs;
          if (j == 0) {
            inputs = microBatches[i];
          } else {
            const TensorSpecs specs = decodeSpecs(
                mailbox_.receive(headerSpec, context_.rankOf(j - 1), tags.tag(MessageKind::Shapes, j - 1, ri), torch::kCPU));
            shapes_.activations[{j - 1, r}] = specs;
            inputs = zerosOf(specs, options_.device);
          }
          ShapeTracker tracker(
              routes_, j,
              [&](const PartitionSkipRoute& route, const torch::Tensor& tensor) {
                const TensorSpecs specs = specsOf({tensor});
                shapes_.skips[{route.scheduleIndex, r}] = specs.front();
                mailbox_.send(encodeSpecs(specs), context_.rankOf(route.popJ),
                              tags.tag(MessageKind::Shapes, route.stashJ, ri, 0, route.scheduleIndex));
              },
              [&](const PartitionSkipRoute& route) {
                const TensorSpecs specs = decodeSpecs(mailbox_.receive(
                    headerSpec, context_.rankOf(route.stashJ),
                    tags.tag(MessageKind::Shapes, route.stashJ, ri, 0, route.scheduleIndex), torch::kCPU));
                shapes_.skips[{route.scheduleIndex, r}] = specs.front();
                return zerosOf(specs, options_.device).front();
              });
          Tensors outputs;
          {
            ScopedSkipTracker scope(&tracker);
            // Random layers draw nothing in eval mode; a Stochastic one might: the generators are
            // restored afterwards (the scope is held only by stochastic stages, as in a step).
            std::optional<SeededRngScope> keepGenerators;
            if (partition.stochastic) keepGenerators.emplace(0, options_.device);
            outputs = runLayers(partition, std::move(inputs));
          }
          if (j + 1 < n) {
            const TensorSpecs specs = specsOf(outputs);
            shapes_.activations[{j, r}] = specs;
            mailbox_.send(encodeSpecs(specs), context_.rankOf(j + 1), tags.tag(MessageKind::Shapes, j, ri));
          }
        }
      }
      mailbox_.finishSends();
    } catch (const std::exception& error) {
      mailbox_.abandon();
      train(wasTraining);
      std::throw_with_nested(PipeError("agreeing on the shapes between stages failed on rank " + std::to_string(rank_) +
                                           ": " + errorText(error),
                                       -1, -1));
    }
    train(wasTraining);
  }
};

StageRuntime::StageRuntime(torch::nn::Sequential module, StageOptions options, Transport& transport)
    : impl_(std::make_unique<StageRuntimeImpl>(std::move(module), std::move(options), transport)) {}
StageRuntime::~StageRuntime() = default;
StageRuntime::StageRuntime(StageRuntime&&) noexcept = default;
StageRuntime& StageRuntime::operator=(StageRuntime&&) noexcept = default;

torch::Tensor StageRuntime::step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn,
                                 std::uint64_t baseSeed) {
  return impl_->step(input, target, lossFn, baseSeed);
}

std::uint64_t StageRuntime::stepSeed() const { return impl_->stepSeed(); }
std::vector<std::int64_t> StageRuntime::stages() const { return impl_->stages(); }
std::vector<torch::Tensor> StageRuntime::parameters() const { return impl_->parameters_; }
std::vector<std::string> StageRuntime::parameterNames() const { return impl_->parameterNames_; }
Bytes StageRuntime::peakBytes() const { return impl_->parameterBytes_ + pipeprof::peakBytes(impl_->rank_); }
TransferTotals StageRuntime::transferTotals() const { return impl_->mailbox_.totals(); }
void StageRuntime::setTracer(HostTracer* tracer) { impl_->context_.tracer = tracer; }
void StageRuntime::train(bool on) { impl_->train(on); }

}  // namespace pipeprof
