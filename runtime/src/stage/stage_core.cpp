// One stage's work for one micro-batch, written once for both executors.
#include "stage/stage_core.h"

#include "stage/autocast.h"
#include "stage/graph_walk.h"
#include "stage/recompute_scope.h"
#include "stage/rng.h"
#include "stage/slice_hooks.h"

#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/memory_tracker.h>

#include <optional>
#include <stdexcept>
#include <unordered_set>

namespace pipeprof {

std::string opLocation(const Schedule& schedule, const Op& op) {
  return schedule.label(op) + " on stage " + std::to_string(op.j) + ", micro-batch " + std::to_string(op.i);
}

Op copyOp(OpKind kind, std::int64_t i, std::int64_t fromJ, std::int64_t toJ, bool gradient, std::int64_t skip) {
  Op op;
  op.kind = kind;
  op.i = i;
  op.j = fromJ;
  op.toJ = toJ;
  op.gradient = gradient;
  op.skip = skip;
  return op;
}

/// Routes the stash/pop calls of stage j's layers on micro-batch i: a skip that stays inside
/// the stage is kept here; one that crosses stages goes through the channel, and its ends are
/// kept in the cells for backward (the stashed tensor's graph, the popped tensor's leaf).
class StageCore::SkipRouter final : public SkipTracker {
 public:
  SkipRouter(StageCore& core, std::int64_t i, std::int64_t j, Pass pass) : core_(core), i_(i), j_(j), pass_(pass) {}

  void stash(const SkipKey& key, torch::Tensor tensor) override {
    const StageSkipRoute* route = crossRoute(*core_.config_.routes, key, j_, /*stashing=*/true);
    if (route == nullptr) {
      local_[key] = std::move(tensor);
      return;
    }
    Cell& cell = core_.cell(i_, j_);
    if (pass_ == Pass::Recompute) {  // the forward sent it already; backward needs the new graph
      cell.stashedOut[key] = std::move(tensor);
      return;
    }
    if (core_.config_.gradEnabled && !core_.checkpointed(i_)) cell.stashedOut[key] = tensor;
    core_.forward_.sendSkip(*route, i_, tensor);
  }

  torch::Tensor pop(const SkipKey& key) override {
    auto local = local_.find(key);
    if (local != local_.end()) {
      torch::Tensor tensor = std::move(local->second);
      local_.erase(local);
      return tensor;
    }
    const StageSkipRoute* route = crossRoute(*core_.config_.routes, key, j_, /*stashing=*/false);
    if (route == nullptr) throw std::runtime_error("skip '" + key.second + "' was popped before it was stashed");
    Cell& cell = core_.cell(i_, j_);
    const Precision precision = core_.config_.precision;
    if (pass_ == Pass::Recompute) return uncachedInputs({cell.poppedLeaves.at(key)}, precision).front();
    torch::Tensor tensor = core_.forward_.receiveSkip(*route, i_);
    if (!core_.config_.gradEnabled) return tensor;
    torch::Tensor leaf = leafOf(tensor, true);
    cell.poppedLeaves[key] = leaf;
    return uncachedInputs({leaf}, precision).front();  // a view: autocast caches no cast of it
  }

 private:
  StageCore& core_;
  std::int64_t i_;
  std::int64_t j_;
  Pass pass_;
  std::map<SkipKey, torch::Tensor> local_;
};

StageCore::StageCore(StageCoreConfig config, ForwardChannel& forward, BackwardChannel* backward,
                     std::vector<Tensors> microBatches, std::vector<torch::Tensor> targets)
    : config_(std::move(config)),
      forward_(forward),
      backward_(backward),
      m_(static_cast<std::int64_t>(microBatches.size())),
      n_(config_.schedule->stages()),
      microBatches_(std::move(microBatches)),
      targets_(std::move(targets)),
      cells_(static_cast<std::size_t>(m_ * n_)) {}

AutocastScope StageCore::autocastFor(std::int64_t d) const {
  for (const Stage* stage : config_.stages) {
    if (stage != nullptr && stage->d == d) return AutocastScope(config_.precision, stage->device);
  }
  throw std::logic_error("no stage of this process runs on pipeline device " + std::to_string(d));
}

void StageCore::run(const Op& op) {
  switch (op.kind) {
    case OpKind::Forward: forward(op.i, op.j); break;
    case OpKind::Recompute: recompute(op.i, op.j); break;
    case OpKind::Backward:
    case OpKind::BackwardInput: backward(op.i, op.j, op.kind); break;
    case OpKind::BackwardWeight: backwardWeight(op.i, op.j); break;
    case OpKind::Loss: loss(op.i); break;
    case OpKind::Copy:
    case OpKind::SkipCopy: return;  // the channels move tensors as the compute ops need them
  }
  recordMemory(op.j);
}

namespace {

/// Opens the span of a compute op on its stage's lane when tracing is on (one branch when off).
void openSpan(std::optional<OpSpan>& span, const StageCoreConfig& config, const Op& op) {
  HostTracer* tracer = config.tracer;
  if (tracer != nullptr && tracer->enabled()) {
    span.emplace(tracer, op.kind, op.i, op.j, op.j, config.traceDevices.at(static_cast<std::size_t>(op.j)),
                 "partition " + std::to_string(op.j), config.schedule->label(op));
  }
}

Op computeOp(OpKind kind, std::int64_t i, std::int64_t j) { return copyOp(kind, i, j, j, false, -1); }

}  // namespace

Tensors StageCore::runStage(std::int64_t i, std::int64_t j, Tensors inputs, Pass pass) {
  const Stage& stage = *config_.stages.at(static_cast<std::size_t>(j));
  SkipRouter router(*this, i, j, pass);
  ScopedSkipTracker scope(&router);
  std::optional<SeededRngScope> rng;
  if (stage.stochastic) rng.emplace(cellSeed(config_.baseSeed, i, j), stage.device);
  std::optional<AutocastCacheOff> cacheOff;  // a cast made without a graph is not for the others
  if (!torch::GradMode::is_enabled()) cacheOff.emplace();
  return runLayers(stage, std::move(inputs));
}

void StageCore::forward(std::int64_t i, std::int64_t j) {
  Tensors inputs =
      j == 0 ? std::move(microBatches_.at(static_cast<std::size_t>(i))) : forward_.receiveActivations(i, j);
  const bool keepGraph = config_.gradEnabled && !checkpointed(i);
  Tensors outputs;
  {
    std::optional<OpSpan> span;
    openSpan(span, config_, computeOp(OpKind::Forward, i, j));
    Cell& own = cell(i, j);
    if (config_.gradEnabled) {
      own.inputs.clear();  // for backward, and for the recompute of a checkpointed micro-batch
      for (const auto& input : inputs) own.inputs.push_back(stageInputOf(input, j > 0 || input.requires_grad()));
      inputs = tensorsOf(own.inputs);
    }
    torch::AutoGradMode gradMode(keepGraph);
    // The recompute reads the inputs again: a checkpointed forward of a stage that writes them in
    // place (or may: nothing ran yet to tell) gets a copy.
    const Stage& stage = *config_.stages.at(static_cast<std::size_t>(j));
    if (config_.gradEnabled && !keepGraph && stage.inputWrites != InputWrites::No) {
      for (auto& input : inputs) input = input.clone();
    }
    const std::vector<std::uint32_t> versions = versionsOf(inputs);
    outputs = runStage(i, j, inputs, Pass::Forward);
    if (stage.inputWrites != InputWrites::InPlace) {
      stage.inputWrites = writtenSince(inputs, versions) ? InputWrites::InPlace : InputWrites::No;
    }
  }
  const bool last = j + 1 == n_;
  if (!last) forward_.sendActivations(i, j, outputs);
  // The last stage's outputs wait for the loss (or the caller); others only for backward.
  if (keepGraph || last) cell(i, j).outputs = std::move(outputs);
}

void StageCore::recompute(std::int64_t i, std::int64_t j) {
  std::optional<OpSpan> span;
  openSpan(span, config_, computeOp(OpKind::Recompute, i, j));
  Cell& own = cell(i, j);
  torch::AutoGradMode gradMode(true);
  RecomputeScope recomputing;
  Tensors outputs = runStage(i, j, tensorsOf(own.inputs), Pass::Recompute);
  if (config_.lossFn != nullptr && j + 1 == n_) {
    // loss(i) ran without a graph; backward(i, n-1) starts from the loss recomputed here.
    own.loss = weightedLoss(outputs, targets_.at(static_cast<std::size_t>(i)));
    return;
  }
  own.recomputed = std::move(outputs);
}

torch::Tensor StageCore::weightedLoss(const Tensors& outputs, const torch::Tensor& target) const {
  if (outputs.size() != 1) {
    throw std::invalid_argument("step() needs the last layer to return one tensor (it returned " +
                                std::to_string(outputs.size()) + ")");
  }
  const double weight = static_cast<double>(target.size(0)) / static_cast<double>(config_.batchRows);
  return weighMicroBatchLoss((*config_.lossFn)(outputs.front(), target), weight);
}

void StageCore::loss(std::int64_t i) {
  Cell& own = cell(i, n_ - 1);
  Tensors outputs = std::move(own.outputs);  // the loss's graph keeps what backward needs
  std::optional<OpSpan> span;
  openSpan(span, config_, computeOp(OpKind::Loss, i, n_ - 1));
  // A checkpointed micro-batch's forward kept no graph: its loss is recomputed before backward.
  const bool keepGraph = config_.gradEnabled && !checkpointed(i);
  torch::Tensor loss;
  {
    torch::AutoGradMode gradMode(keepGraph);
    loss = weightedLoss(outputs, targets_.at(static_cast<std::size_t>(i)));
  }
  own.lossValue = loss.detach();
  if (keepGraph) own.loss = std::move(loss);
}

void StageCore::backward(std::int64_t i, std::int64_t j, OpKind kind) {
  if (backward_ == nullptr) {
    throw std::logic_error("backward(" + std::to_string(i) + "," + std::to_string(j) + ") in a pass of forwards only");
  }
  BackwardChannel& channel = *backward_;
  // The last stage of a step with a loss starts from loss(i); every other from the gradients of
  // its outputs (the last stage's from the caller when there is no loss).
  const bool fromLoss = config_.lossFn != nullptr && j + 1 == n_;
  Tensors outputGrads = fromLoss ? Tensors{} : channel.receiveOutputGrads(i, j);
  std::map<SkipKey, torch::Tensor> stashGrads;
  for (const auto& route : *config_.routes) {
    if (route.stashJ == j && route.popJ != j) stashGrads[route.key] = channel.receiveSkipGrad(route, i);
  }
  Cell& own = cell(i, j);
  Tensors inputGrads;
  std::vector<std::pair<const StageSkipRoute*, torch::Tensor>> popGrads;
  {
    std::optional<OpSpan> span;
    openSpan(span, config_, computeOp(kind, i, j));
    std::vector<torch::Tensor> tensors;
    std::vector<torch::Tensor> grads;
    if (fromLoss && own.loss.defined() && own.loss.requires_grad()) {
      tensors.push_back(own.loss);
      grads.push_back(torch::full_like(own.loss, config_.lossScale));
    }
    // A checkpointed micro-batch's graph is the recompute's; its forward outputs went to j + 1.
    const Tensors& graphOutputs = checkpointed(i) ? own.recomputed : own.outputs;
    for (std::size_t k = 0; k < graphOutputs.size() && k < outputGrads.size(); ++k) {
      if (graphOutputs[k].requires_grad() && outputGrads[k].defined()) {
        tensors.push_back(graphOutputs[k]);
        grads.push_back(outputGrads[k]);
      }
    }
    for (const auto& [key, tensor] : own.stashedOut) {
      auto grad = stashGrads.find(key);
      if (tensor.requires_grad() && grad != stashGrads.end() && grad->second.defined()) {
        tensors.push_back(tensor);
        grads.push_back(grad->second);
      }
    }
    std::vector<const StageSkipRoute*> popRoutes;
    std::vector<torch::Tensor> popLeaves;  // undefined where no gradient is wanted
    for (const auto& route : *config_.routes) {
      if (route.popJ != j || route.stashJ == j) continue;
      auto leaf = own.poppedLeaves.find(route.key);
      popRoutes.push_back(&route);
      popLeaves.push_back(leaf != own.poppedLeaves.end() && leaf->second.requires_grad() ? leaf->second
                                                                                         : torch::Tensor());
    }
    AutocastPause pause;  // the backward's ops take the types its forward chose
    Tensors popped;
    torch::autograd::edge_list ends;  // the inputs' gradient edges, then the popped leaves'
    for (const StageInput& input : own.inputs) ends.push_back(input.gradientEdge());
    for (const auto& leaf : popLeaves) {
      ends.push_back(leaf.defined() ? torch::autograd::impl::gradient_edge(leaf) : torch::autograd::Edge());
    }
    if (kind == OpKind::Backward) {
      if (!tensors.empty()) {
        const std::unordered_set<torch::autograd::Node*> targets = nodesOf(ends);
        std::optional<SliceHooks> slices;
        if (!targets.empty()) slices.emplace(reachingNodes(gradientEdgesOf(tensors), targets), targets);
        torch::autograd::backward(tensors, grads);
      }
      for (const StageInput& input : own.inputs) inputGrads.push_back(input.grad());
      for (const auto& leaf : popLeaves) popped.push_back(leaf.defined() ? leaf.grad() : torch::Tensor());
    } else {
      Tensors computed = own.weights.runInputs(tensors, grads, ends);
      inputGrads.assign(computed.begin(), computed.begin() + static_cast<std::ptrdiff_t>(own.inputs.size()));
      popped.assign(computed.begin() + static_cast<std::ptrdiff_t>(own.inputs.size()), computed.end());
    }
    for (std::size_t k = 0; k < popRoutes.size(); ++k) popGrads.emplace_back(popRoutes[k], std::move(popped[k]));
    torch::Tensor lossValue = std::move(own.lossValue);  // the step's loss reads it at the end
    WeightBackward weights = std::move(own.weights);
    own = Cell{};
    own.lossValue = std::move(lossValue);
    own.weights = std::move(weights);
    if (fromLoss) targets_.at(static_cast<std::size_t>(i)) = torch::Tensor();
  }
  channel.sendInputGrads(i, j, std::move(inputGrads));
  for (auto& [route, grad] : popGrads) channel.sendSkipGrad(*route, i, std::move(grad));
}

void StageCore::backwardWeight(std::int64_t i, std::int64_t j) {
  std::optional<OpSpan> span;
  openSpan(span, config_, computeOp(OpKind::BackwardWeight, i, j));
  AutocastPause pause;
  cell(i, j).weights.runWeights();
}

void StageCore::recordMemory(std::int64_t j) const {
  HostTracer* tracer = config_.tracer;
  if (tracer == nullptr || !tracer->enabled()) return;
  const std::int64_t d = config_.stages.at(static_cast<std::size_t>(j))->d;
  tracer->recordCounter(
      config_.traceDevices.at(static_cast<std::size_t>(j)), "memory", tracer->nowNs(),
      static_cast<double>(liveBytes(d) + config_.deviceParameterBytes.at(static_cast<std::size_t>(d))));
}

Tensors StageCore::lossValues() const {
  Tensors values;
  for (std::int64_t i = 0; i < m_; ++i) values.push_back(cell(i, n_ - 1).lossValue);
  return values;
}

void StageCore::sumSharedGradients(const PeerGradients& peers) const {
  if (config_.gradEnabled && config_.shared != nullptr) pipeprof::sumSharedGradients(*config_.shared, peers);
}

void StageCore::release() {
  cells_.assign(cells_.size(), Cell{});
  microBatches_.clear();
  targets_.clear();
}

}  // namespace pipeprof
