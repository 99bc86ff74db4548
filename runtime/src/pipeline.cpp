// One training step of the pipeline: per-cell state and the ops each device's worker runs.
#include "pipeline.h"

#include "checkpoint.h"
#include "rng.h"

#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/pipe.h>

#include <optional>
#include <stdexcept>

namespace pipeprof {
namespace {

/// Thrown inside a worker when another op failed; never reported as the step's error.
struct StepAborted {};

/// The span of an op when tracing is on; nothing (one branch) when it is off.
void openSpan(std::optional<OpSpan>& span, const StepConfig& config, const Op& op) {
  if (config.tracer != nullptr && config.tracer->enabled()) {
    const auto target = static_cast<std::size_t>(op.isCopy() ? op.toJ : op.j);
    const std::string lane = op.isCopy() ? "copy " + std::to_string(op.j) + "->" + std::to_string(op.toJ)
                                         : "partition " + std::to_string(op.j);
    span.emplace(config.tracer, op.kind, op.i, op.j, op.toJ, config.deviceNames.at(target), lane,
                 config.schedule->label(op));
  }
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

}  // namespace

/// Routes stash/pop of the layers of (i, j) to the step: same-partition skips stay local,
/// cross-partition skips go through the step (and their leaves are kept for backward).
class Step::CellTracker final : public SkipTracker {
 public:
  CellTracker(Step& step, std::int64_t i, std::int64_t j, Pass pass) : step_(step), i_(i), j_(j), pass_(pass) {}

  void stash(const SkipKey& key, torch::Tensor tensor) override {
    const PartitionSkipRoute* route = crossRoute(step_.config_.routes, key, j_, /*stashing=*/true);
    if (route == nullptr) {
      local_[key] = std::move(tensor);
      return;
    }
    Cell& cell = step_.cell(i_, j_);
    if (pass_ == Pass::Recompute) {
      cell.stashedOut[key] = std::move(tensor);
      return;
    }
    if (step_.config_.gradEnabled && !step_.checkpointed(i_)) {
      cell.stashedOut[key] = tensor;
    }
    Handover handover{{std::move(tensor)}, step_.config_.streams->markReady(j_)};
    std::lock_guard<std::mutex> lock(step_.mutex_);
    step_.skipsInFlight_[{key, i_}] = std::move(handover);
    step_.wake(route->popJ);
  }

  torch::Tensor pop(const SkipKey& key) override {
    auto local = local_.find(key);
    if (local != local_.end()) {
      torch::Tensor tensor = std::move(local->second);
      local_.erase(local);
      return tensor;
    }
    const PartitionSkipRoute* route = crossRoute(step_.config_.routes, key, j_, /*stashing=*/false);
    if (route == nullptr) {
      throw std::runtime_error("skip '" + key.second + "' was popped before it was stashed");
    }
    Cell& cell = step_.cell(i_, j_);
    if (pass_ == Pass::Recompute) {
      return cell.poppedLeaves.at(key);
    }
    Handover handover;
    {
      std::unique_lock<std::mutex> lock(step_.mutex_);
      const auto slot = std::make_pair(key, i_);
      if (!step_.waitFor(lock, j_, [&] { return step_.skipsInFlight_.count(slot) > 0; })) {
        throw StepAborted{};
      }
      auto it = step_.skipsInFlight_.find(slot);
      handover = std::move(it->second);
      step_.skipsInFlight_.erase(it);  // freed as soon as popped (unless a graph keeps it)
    }
    torch::Tensor tensor;
    {
      std::optional<OpSpan> span;
      openSpan(span, step_.config_, copyOp(OpKind::SkipCopy, i_, route->stashJ, j_, false, route->scheduleIndex));
      const PipeStreams& streams = *step_.config_.streams;
      tensor = streams.accept(streams.transfer(std::move(handover), route->stashJ, j_, CopyDirection::Forward), j_)
                   .front();
    }
    if (!step_.config_.gradEnabled) {
      return tensor;
    }
    torch::Tensor leaf = leafOf(tensor, true);
    cell.poppedLeaves[key] = leaf;
    return leaf;
  }

 private:
  Step& step_;
  std::int64_t i_;
  std::int64_t j_;
  Pass pass_;
  std::map<SkipKey, torch::Tensor> local_;
};

Step::Step(StepConfig config, std::vector<Tensors> microBatches)
    : config_(std::move(config)),
      m_(static_cast<std::int64_t>(microBatches.size())),
      n_(static_cast<std::int64_t>(config_.partitions->size())),
      cells_(static_cast<std::size_t>(m_ * n_)),
      changed_(static_cast<std::size_t>(n_)) {
  for (std::int64_t i = 0; i < m_; ++i) {
    cell(i, 0).inputs = std::move(microBatches[static_cast<std::size_t>(i)]);
    if (static_cast<std::size_t>(i) < config_.targets.size()) {
      cell(i, n_ - 1).target = config_.targets[static_cast<std::size_t>(i)];
    }
    if (!config_.gradEnabled) {
      continue;
    }
    for (const auto& route : config_.routes) {
      if (route.stashJ != route.popJ) {
        ++cell(i, route.stashJ).pendingStashGrads;
      }
    }
  }
}

Step::Cell& Step::cell(std::int64_t i, std::int64_t j) { return cells_[static_cast<std::size_t>(i * n_ + j)]; }

bool Step::checkpointed(std::int64_t i) const { return config_.schedule->checkpointed(i); }

template <typename Ready>
bool Step::waitFor(std::unique_lock<std::mutex>& lock, std::int64_t j, Ready ready) {
  changed_[static_cast<std::size_t>(j)].wait(lock, [&] { return failed_ || ready(); });
  return !failed_;
}

void Step::wake(std::int64_t j) { changed_[static_cast<std::size_t>(j)].notify_one(); }

void Step::fail(const Op& op, std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_) {
    failed_ = true;
    error_ = std::move(error);
    errorI_ = op.i;
    errorJ_ = op.j;
    errorWhere_ = config_.schedule->label(op) + " on partition " + std::to_string(op.j) + ", micro-batch " +
                  std::to_string(op.i);
  }
  for (auto& changed : changed_) {
    changed.notify_all();
  }
}

void Step::recordMemory(std::int64_t j) const {
  HostTracer* tracer = config_.tracer;
  if (tracer != nullptr && tracer->enabled()) {
    const std::int64_t d = (*config_.partitions)[static_cast<std::size_t>(j)].d;
    tracer->recordCounter(config_.deviceNames.at(static_cast<std::size_t>(j)), "memory", tracer->nowNs(),
                          static_cast<double>(liveBytes(d) + config_.deviceParameterBytes.at(static_cast<std::size_t>(d))));
  }
}

namespace {

bool inPhase(OpKind kind, StepPhase phase) {
  switch (phase) {
    case StepPhase::Forward:
      return kind == OpKind::Forward;
    case StepPhase::Backward:
      return kind == OpKind::Recompute || kind == OpKind::Backward;  // the caller computed the loss
    case StepPhase::Training:
      return true;
  }
  return false;
}

}  // namespace

void Step::run(std::int64_t d, StepPhase phase) {
  // Everything the worker allocates counts against its device, whichever stage it runs.
  ScopedAllocationTag tag(d);
  for (OpIndex index : config_.schedule->deviceOrder(d)) {
    const Op& op = config_.schedule->op(index);
    if (!op.isCompute() || !inPhase(op.kind, phase) || (op.kind == OpKind::Loss && config_.lossFn == nullptr)) {
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed_) {
        return;
      }
    }
    try {
      // Each op runs on its own stage's compute stream (a device's stages have one each).
      PipeStreams::ComputeScope onCompute(*config_.streams, op.j);
      switch (op.kind) {
        case OpKind::Forward:
          forwardOp(op);
          break;
        case OpKind::Recompute:
          recomputeOp(op);
          break;
        case OpKind::Backward:
          backwardOp(op);
          break;
        case OpKind::Loss:
          lossOp(op);
          break;
        case OpKind::Copy:
        case OpKind::SkipCopy:
          break;
      }
    } catch (const StepAborted&) {
      return;
    } catch (...) {
      fail(op, std::current_exception());
      return;
    }
    recordMemory(op.j);
  }
}

Tensors Step::runPartition(std::int64_t i, std::int64_t j, Tensors inputs, Pass pass) {
  const Partition& partition = (*config_.partitions)[static_cast<std::size_t>(j)];
  CellTracker tracker(*this, i, j, pass);
  ScopedSkipTracker scope(&tracker);
  std::optional<SeededRngScope> rng;
  if (partition.stochastic) {
    rng.emplace(cellSeed(config_.baseSeed, i, j), partition.device);
  }
  return runLayers(partition, std::move(inputs));
}

void Step::forwardOp(const Op& op) {
  const std::int64_t i = op.i;
  const std::int64_t j = op.j;
  // Partition 0's micro-batches are ready on its compute stream: PipeStreams::fork.
  Handover incoming;
  if (j == 0) {
    incoming.tensors = std::move(cell(i, 0).inputs);
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    Cell& previous = cell(i, j - 1);
    if (!waitFor(lock, j, [&] { return previous.outputReady; })) {
      return;
    }
    incoming = {previous.outputs, previous.outputsWritten};
    if (!config_.gradEnabled || checkpointed(i)) {
      previous.outputs.clear();  // no graph needs them; recompute makes new ones
    }
  }
  Tensors inputs;
  {
    std::optional<OpSpan> copySpan;
    if (j > 0) {
      openSpan(copySpan, config_, copyOp(OpKind::Copy, i, j - 1, j, false, -1));
      incoming = config_.streams->transfer(std::move(incoming), j - 1, j, CopyDirection::Forward);
    }
    inputs = config_.streams->accept(std::move(incoming), j);
  }
  std::optional<OpSpan> span;
  openSpan(span, config_, op);
  Cell& own = cell(i, j);
  if (config_.gradEnabled) {
    for (auto& input : inputs) {
      input = leafOf(input, j > 0 || input.requires_grad());
    }
    own.inputs = inputs;
  }
  Tensors outputs;
  {
    torch::AutoGradMode gradMode(config_.gradEnabled && !checkpointed(i));
    outputs = runPartition(i, j, std::move(inputs), Pass::Forward);
  }
  ReadyEvent written = config_.streams->markReady(j);
  std::lock_guard<std::mutex> lock(mutex_);
  own.outputs = std::move(outputs);
  own.outputsWritten = std::move(written);
  own.outputReady = true;
  if (j + 1 < n_) {
    wake(j + 1);
  }
}

void Step::recomputeOp(const Op& op) {
  std::optional<OpSpan> span;
  openSpan(span, config_, op);
  Cell& own = cell(op.i, op.j);
  torch::AutoGradMode gradMode(true);
  RecomputeScope recomputing;
  Tensors outputs = runPartition(op.i, op.j, own.inputs, Pass::Recompute);
  if (config_.lossFn != nullptr && op.j == n_ - 1) {
    // step(): loss(i) ran without a graph; backward(i, n-1) starts from the loss recomputed here.
    torch::Tensor loss = weightedLoss(outputs, own.target);
    std::lock_guard<std::mutex> lock(mutex_);
    own.loss = std::move(loss);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  own.recomputed = std::move(outputs);
}

torch::Tensor Step::weightedLoss(const Tensors& outputs, const torch::Tensor& target) const {
  if (outputs.size() != 1) {
    throw std::invalid_argument("step() needs the last layer to return one tensor (it returned " +
                                std::to_string(outputs.size()) + ")");
  }
  torch::Tensor loss = (*config_.lossFn)(outputs.front(), target);
  if (!loss.defined() || loss.numel() != 1) {
    throw std::invalid_argument("the loss function must return a scalar (it returned " +
                                (loss.defined() ? std::to_string(loss.numel()) + " elements" : std::string("nothing")) +
                                ")");
  }
  // A mean over the micro-batch's rows, weighed by its share: the sum is the mini-batch's mean.
  const double weight = static_cast<double>(target.size(0)) / static_cast<double>(config_.batchRows);
  return loss.reshape({}) * weight;
}

void Step::lossOp(const Op& op) {
  Cell& own = cell(op.i, n_ - 1);
  Tensors outputs;
  torch::Tensor target;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outputs = std::move(own.outputs);  // the loss's graph keeps what backward needs
    target = own.target;
  }
  std::optional<OpSpan> span;
  openSpan(span, config_, op);
  // A checkpointed micro-batch's forward kept no graph: its loss is recomputed before backward.
  const bool keepGraph = config_.gradEnabled && !checkpointed(op.i);
  torch::Tensor loss;
  {
    torch::AutoGradMode gradMode(keepGraph);
    loss = weightedLoss(outputs, target);
  }
  outputs.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  own.lossValue = loss.detach();
  if (keepGraph) {
    own.loss = std::move(loss);
  }
}

void Step::backwardOp(const Op& op) {
  const std::int64_t i = op.i;
  const std::int64_t j = op.j;
  Cell& own = cell(i, j);
  // step(): the last stage's backward starts from loss(i), which its own worker computed.
  const bool fromLoss = config_.lossFn != nullptr && j == n_ - 1;
  Handover outputGradsIn;
  std::map<SkipKey, Handover> stashGradsIn;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!waitFor(lock, j, [&] { return (fromLoss || own.outputGradsReady) && own.pendingStashGrads == 0; })) {
      return;
    }
    outputGradsIn = std::move(own.outputGrads);
    stashGradsIn = std::move(own.stashGrads);
  }
  const PipeStreams& streams = *config_.streams;
  Tensors outputGrads = streams.accept(std::move(outputGradsIn), j);
  std::map<SkipKey, torch::Tensor> stashGrads;
  for (auto& [key, handover] : stashGradsIn) {
    stashGrads[key] = streams.accept(std::move(handover), j).front();
  }
  Tensors inputGrads;
  std::vector<std::pair<const PartitionSkipRoute*, torch::Tensor>> popGrads;
  {
    std::optional<OpSpan> span;
    openSpan(span, config_, op);
    std::vector<torch::Tensor> tensors;
    std::vector<torch::Tensor> grads;
    if (fromLoss) {
      if (own.loss.defined() && own.loss.requires_grad()) {
        tensors.push_back(own.loss);
        grads.push_back(torch::ones_like(own.loss));
      }
    }
    // A checkpointed micro-batch's graph is the recompute's; its forward outputs went to j+1.
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
    if (!tensors.empty()) {
      torch::autograd::backward(tensors, grads);
    }
    for (const auto& input : own.inputs) {
      inputGrads.push_back(input.requires_grad() ? input.grad() : torch::Tensor());
    }
    for (const auto& route : config_.routes) {
      if (route.popJ == j && route.stashJ != j) {
        auto leaf = own.poppedLeaves.find(route.key);
        popGrads.emplace_back(&route, leaf != own.poppedLeaves.end() && leaf->second.requires_grad()
                                          ? leaf->second.grad()
                                          : torch::Tensor());
      }
    }
    own.inputs.clear();
    own.outputs.clear();
    own.recomputed.clear();
    own.loss = torch::Tensor();
    own.target = torch::Tensor();
    own.stashedOut.clear();
    own.poppedLeaves.clear();
    outputGrads.clear();
    stashGrads.clear();
  }
  sendGradients(i, j, std::move(inputGrads), std::move(popGrads));
}

void Step::sendGradients(std::int64_t i, std::int64_t j, Tensors inputGrads,
                         std::vector<std::pair<const PartitionSkipRoute*, torch::Tensor>> popGrads) {
  const PipeStreams& streams = *config_.streams;
  const ReadyEvent computed = streams.markReady(j);
  Handover toPrevious{std::move(inputGrads), computed};
  if (j > 0) {
    std::optional<OpSpan> span;
    openSpan(span, config_, copyOp(OpKind::Copy, i, j, j - 1, true, -1));
    toPrevious = streams.transfer(std::move(toPrevious), j, j - 1, CopyDirection::Backward);
  }
  std::vector<std::pair<const PartitionSkipRoute*, Handover>> toStashers;
  for (auto& [route, grad] : popGrads) {
    Handover handover{{std::move(grad)}, computed};
    if (handover.tensors.front().defined()) {
      std::optional<OpSpan> span;
      openSpan(span, config_, copyOp(OpKind::SkipCopy, i, j, route->stashJ, true, route->scheduleIndex));
      handover = streams.transfer(std::move(handover), j, route->stashJ, CopyDirection::Backward);
    }
    toStashers.emplace_back(route, std::move(handover));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (j > 0) {
    Cell& previous = cell(i, j - 1);
    previous.outputGrads = std::move(toPrevious);
    previous.outputGradsReady = true;
    wake(j - 1);
  } else {
    cell(i, 0).inputGrads = std::move(toPrevious.tensors);  // the caller joins the streams first
  }
  for (auto& [route, handover] : toStashers) {
    Cell& stasher = cell(i, route->stashJ);
    stasher.stashGrads[route->key] = std::move(handover);
    --stasher.pendingStashGrads;
    wake(route->stashJ);
  }
}

std::vector<Tensors> Step::lastOutputs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Tensors> outputs;
  for (std::int64_t i = 0; i < m_; ++i) {
    // Ready on the caller's streams (the phase joined them); in use there from now on.
    outputs.push_back(config_.streams->accept({cells_[static_cast<std::size_t>(i * n_ + n_ - 1)].outputs, nullptr},
                                              n_ - 1));
  }
  return outputs;
}

void Step::setOutputGrads(std::vector<Tensors> grads) {
  const ReadyEvent produced = config_.streams->markReady(n_ - 1);
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::int64_t i = 0; i < m_; ++i) {
    Cell& last = cell(i, n_ - 1);
    last.outputGrads = {std::move(grads.at(static_cast<std::size_t>(i))), produced};
    last.outputGradsReady = true;
  }
  wake(n_ - 1);
}

std::vector<Tensors> Step::inputGrads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Tensors> grads;
  for (std::int64_t i = 0; i < m_; ++i) {
    grads.push_back(config_.streams->accept({cells_[static_cast<std::size_t>(i * n_)].inputGrads, nullptr}, 0));
  }
  return grads;
}

torch::Tensor Step::lossSum() const {
  Tensors values;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::int64_t i = 0; i < m_; ++i) {
      values.push_back(cells_[static_cast<std::size_t>(i * n_ + n_ - 1)].lossValue);
    }
  }
  values = config_.streams->accept({std::move(values), nullptr}, n_ - 1);
  torch::NoGradGuard noGrad;
  return torch::stack(values).sum();
}

void Step::rethrowIfFailed() const {
  std::exception_ptr error;
  std::string where;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      return;
    }
    error = error_;
    where = errorWhere_;
  }
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::throw_with_nested(PipeError(where + " failed: " + errorText(e), errorJ_, errorI_));
  } catch (...) {
    std::throw_with_nested(PipeError(where + " failed with a non-standard exception", errorJ_, errorI_));
  }
}

void Step::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  cells_.clear();
  skipsInFlight_.clear();
}

}  // namespace pipeprof
