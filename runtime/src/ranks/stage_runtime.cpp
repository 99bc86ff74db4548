// One rank of a multi-process pipeline: its stages, the shapes agreed at set-up, and its steps.
#include <pipeprof/runtime/stage_runtime.h>

#include "memory/device_memory.h"
#include "ranks/rank_step.h"
#include "ranks/shape_channel.h"
#include "ranks/stage_messages.h"
#include "stage/autocast.h"
#include "stage/microbatch.h"
#include "stage/stage.h"
#include "stage/stage_set.h"
#include "stage/step_setup.h"

#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/pipe_error.h>
#include <pipeprof/runtime/rank_environment.h>

#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace pipeprof {

class StageRuntimeImpl {
 public:
  StageRuntimeImpl(torch::nn::Sequential module, StageOptions options, Transport& transport)
      : options_(std::move(options)), mailbox_(transport), schedules_(options_, {}) {
    if (module.is_empty())
      throw std::invalid_argument("the stage runtime needs a Sequential module (got an empty holder)");
    p_ = options_.pipelineDevices();
    validatePipeArguments(module, options_, static_cast<std::size_t>(p_));
    validatePrecision(options_.precision, options_.device);
    if (transport.worldSize() != p_) {
      throw std::invalid_argument("the balance has " + std::to_string(options_.stages()) + " stages on " +
                                  std::to_string(p_) + " pipeline devices, but the world has " +
                                  std::to_string(transport.worldSize()) + " ranks: run one rank per pipeline device");
    }
    rank_ = transport.rank();
    training_ = module->is_training();
    // Other ranks' stages stay on the CPU and are dropped with `module` when this returns.
    std::vector<torch::Device> devices(static_cast<std::size_t>(p_), torch::Device(torch::kCPU));
    devices[static_cast<std::size_t>(rank_)] = options_.device;
    stages_ = splitIntoStages(module, options_, options_.deferredBatchNorm, devices);
    // `stochastic` stays the whole pipeline's: every rank draws the step's seed as the threaded
    // Pipe does. The Sequential goes, and the other ranks' layers with it.
    stages_.keepOnly(rank_);
    stages_.module = torch::nn::Sequential(nullptr);
    schedules_ = ScheduleCache(options_, stages_.skips);
    for (const Stage& stage : stages_.stages) {
      parameters_.insert(parameters_.end(), stage.parameters.begin(), stage.parameters.end());
      parameterNames_.insert(parameterNames_.end(), stage.parameterNames.begin(), stage.parameterNames.end());
    }
    context_.routes = &stages_.routes;
    context_.mailbox = &mailbox_;
    context_.device = options_.device;
    context_.traceDevice = rankLabel(rank_, options_.device.str());
    context_.shapes = &shapes_;
  }

  torch::Tensor step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn, std::uint64_t seed,
                     double lossScale) {
    if (!lossFn) throw std::invalid_argument("step() needs a loss function (got an empty LossFn)");
    SplitBatch batch = splitStepBatch(options_, input, target);
    const auto m = static_cast<std::int64_t>(batch.inputs.size());
    const std::vector<std::int64_t> rows = rowsOf(batch.inputs, 0);
    const bool first = ownsStage(0);
    if (first) {
      for (Tensors& microBatch : batch.inputs) microBatch.front() = microBatch.front().to(options_.device);
    }
    prepare(m);
    std::vector<torch::Tensor> targets;
    if (ownsStage(options_.stages() - 1)) {
      for (const torch::Tensor& piece : batch.targets) targets.push_back(piece.to(options_.device));
    }
    if (agreedRows_.count(rows) == 0) {
      agreeShapes(batch, rows, targets, lossFn);
      agreedRows_.insert(rows);
    }
    if (!first) batch.inputs.assign(static_cast<std::size_t>(m), Tensors{});
    // The rank's ops run on its device's current stream, whose CUDA blocks count against the
    // rank's tag as a Pipe's stage streams count against their device's.
    if (options_.device.is_cuda()) {
      const c10::Stream current = c10::impl::VirtualGuardImpl(options_.device.type()).getStream(options_.device);
      attributeDeviceStreams({{current, rank_}});
    }
    stages_.beginStep();
    StageCoreConfig core = coreConfig();
    core.baseSeed = seed;
    core.lossFn = &lossFn;
    core.lossScale = lossScale;
    core.batchRows = batch.rows;
    RankStep step(std::move(core), context_, std::move(batch.inputs), std::move(targets), rows);
    ++context_.stepIndex;
    step.run();
    stages_.endStep(training_);
    return step.lossSum();
  }

  std::uint64_t seed() const { return stepSeed(stages_.stochastic); }

  std::vector<std::int64_t> stages() const {
    std::vector<std::int64_t> stages;
    for (const Stage& stage : stages_.stages) stages.push_back(stage.j);
    return stages;
  }

  void train(bool on) {
    training_ = on;
    for (Stage& stage : stages_.stages) {
      for (auto& layer : stage.layers) layer.ptr()->train(on);
    }
  }

  StageOptions options_;
  Mailbox mailbox_;
  std::int64_t p_ = 1;
  int rank_ = 0;
  bool training_ = true;
  ScheduleCache schedules_;
  StageSet stages_;  ///< this rank's own
  std::vector<torch::Tensor> parameters_;
  std::vector<std::string> parameterNames_;
  RankChannelContext context_;
  HostTracer* tracer_ = nullptr;
  AgreedShapes shapes_;
  std::set<std::vector<std::int64_t>> agreedRows_;
  std::map<std::int64_t, std::unique_ptr<MessageTags>> tags_;  ///< by m

 private:
  bool ownsStage(std::int64_t j) const { return options_.deviceOfStage(j) == rank_; }

  /// The core's view of this rank: its own stages, its trace device and parameters.
  StageCoreConfig coreConfig() const {
    StageCoreConfig core = stages_.coreConfig(options_.stages(), options_.precision);
    core.schedule = context_.schedule;
    core.tracer = tracer_;
    core.traceDevices.assign(static_cast<std::size_t>(options_.stages()), context_.traceDevice);
    return core;
  }

  /// Points the context at the schedule and tags of m micro-batches (in eval mode nothing is
  /// checkpointed, as in the threaded Pipe).
  void prepare(std::int64_t m) {
    context_.schedule = &schedules_.get(m, /*gradEnabled=*/true, training_);
    auto tags = tags_.find(m);
    if (tags == tags_.end()) {
      tags = tags_
                 .emplace(m, std::make_unique<MessageTags>(options_.stages(), m,
                                                           static_cast<std::int64_t>(stages_.routes.size())))
                 .first;
    }
    context_.tags = tags->second.get();
    context_.tracer = tracer_;
  }

  /// Runs every own stage once per distinct micro-batch size through a ShapeChannel: the
  /// forwards in stage order (each receives the shapes of its inputs and sends those of its
  /// outputs), then the loss and the backwards' I halves in reverse stage order (each receives
  /// which of its outputs get a gradient and sends which of its inputs do). Eval mode and its
  /// schedule (nothing checkpointed), so no running statistic, random number or weight
  /// gradient changes. An op that fails throws the PipeError the step's would.
  void agreeShapes(const SplitBatch& batch, const std::vector<std::int64_t>& rows,
                   const std::vector<torch::Tensor>& targets, const LossFn& lossFn) {
    std::vector<std::int64_t> distinct;  // rows of each distinct micro-batch size
    std::vector<std::int64_t> firstOf;   // the step's first micro-batch of that size
    std::vector<Tensors> inputs;
    std::vector<torch::Tensor> distinctTargets;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (std::find(distinct.begin(), distinct.end(), rows[i]) != distinct.end()) continue;
      distinct.push_back(rows[i]);
      firstOf.push_back(static_cast<std::int64_t>(i));
      inputs.push_back(batch.inputs[i]);
      if (!targets.empty()) distinctTargets.push_back(targets[i]);
    }
    const bool wasTraining = training_;
    train(false);
    try {
      ShapeChannel channel(context_, shapes_, distinct);
      StageCoreConfig config = coreConfig();
      const auto m = static_cast<std::int64_t>(batch.inputs.size());
      config.schedule = &schedules_.get(m, /*gradEnabled=*/true, /*training=*/false);
      config.tracer = nullptr;
      config.lossFn = &lossFn;
      config.batchRows = batch.rows;
      StageCore core(std::move(config), channel, &channel, std::move(inputs), std::move(distinctTargets));
      const AutocastScope autocast = core.autocastFor(rank_);  // the step's types cross stages
      for (std::size_t r = 0; r < distinct.size(); ++r) {
        const auto run = [&](OpKind kind, std::int64_t j) {
          Op op = copyOp(kind, static_cast<std::int64_t>(r), j, j, false, -1);
          try {
            core.run(op);
          } catch (const std::exception&) {
            op.i = firstOf[r];
            throwPipeError(opLocation(*core.config().schedule, op), op.j, op.i);
          }
        };
        for (const Stage& stage : stages_.stages) run(OpKind::Forward, stage.j);
        if (ownsStage(options_.stages() - 1)) run(OpKind::Loss, options_.stages() - 1);
        for (auto stage = stages_.stages.rbegin(); stage != stages_.stages.rend(); ++stage)
          run(OpKind::BackwardInput, stage->j);
      }
      core.release();
      mailbox_.finishSends();
    } catch (const std::exception& error) {
      mailbox_.abandon();
      train(wasTraining);
      if (dynamic_cast<const PipeError*>(&error) != nullptr) throw;
      throwPipeError("agreeing on the shapes between stages on rank " + std::to_string(rank_));
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
                                 std::uint64_t baseSeed, double lossScale) {
  return impl_->step(input, target, lossFn, baseSeed, lossScale);
}

std::uint64_t StageRuntime::stepSeed() const { return impl_->seed(); }
std::vector<std::int64_t> StageRuntime::stages() const { return impl_->stages(); }
std::vector<torch::Tensor> StageRuntime::parameters() const { return impl_->parameters_; }
std::vector<std::string> StageRuntime::parameterNames() const { return impl_->parameterNames_; }
Bytes StageRuntime::peakBytes() const {
  const auto rank = static_cast<std::size_t>(impl_->rank_);
  return impl_->stages_.deviceParameterBytes[rank] + pipeprof::peakBytes(impl_->rank_);
}
std::optional<Bytes> StageRuntime::devicePeakBytes() const { return pipeprof::devicePeakBytes(impl_->options_.device); }
TransferTotals StageRuntime::transferTotals() const { return impl_->mailbox_.totals(); }
void StageRuntime::setTracer(HostTracer* tracer) { impl_->tracer_ = tracer; }
void StageRuntime::train(bool on) { impl_->train(on); }

}  // namespace pipeprof
