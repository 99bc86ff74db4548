// One training step of one rank: its device's ops in schedule order, tensors to other ranks as messages.
#include "stage_step.h"

#include "checkpoint.h"
#include "rng.h"

#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/memory_tracker.h>

#include <optional>
#include <stdexcept>

namespace pipeprof {
namespace {

bool carriesGradient(const TensorSpec& spec) { return c10::isFloatingType(spec.dtype) || c10::isComplexType(spec.dtype); }

bool tracing(const HostTracer* tracer) { return tracer != nullptr && tracer->enabled(); }

/// How many ops ahead of the running one a rank posts its receives.
constexpr std::size_t kReceiveWindow = 2;

}  // namespace

/// Routes stash/pop of the layers of (i, j): same-stage skips stay local, skips to another
/// stage go as messages (to this rank itself when both stages are its own).
class RankStep::Tracker final : public SkipTracker {
 public:
  Tracker(RankStep& step, std::int64_t i, std::int64_t j, Pass pass) : step_(step), i_(i), j_(j), pass_(pass) {}

  void stash(const SkipKey& key, torch::Tensor tensor) override {
    const PartitionSkipRoute* route = crossRoute(step_.context_.routes, key, j_, /*stashing=*/true);
    if (route == nullptr) {
      local_[key] = std::move(tensor);
      return;
    }
    Cell& cell = step_.cell(i_, j_);
    if (pass_ == Pass::Recompute) {
      cell.stashedOut[key] = std::move(tensor);
      return;
    }
    if (!step_.context_.schedule->checkpointed(i_)) cell.stashedOut[key] = tensor;
    const StageContext& context = step_.context_;
    step_.send(tensor, context.rankOf(route->popJ),
               context.tags->tag(MessageKind::Skip, route->stashJ, i_, 0, route->scheduleIndex),
               step_.copyLabel(OpKind::SkipCopy, i_, route->stashJ, route->popJ, false, route->scheduleIndex));
  }

  torch::Tensor pop(const SkipKey& key) override {
    auto local = local_.find(key);
    if (local != local_.end()) {
      torch::Tensor tensor = std::move(local->second);
      local_.erase(local);
      return tensor;
    }
    const PartitionSkipRoute* route = crossRoute(step_.context_.routes, key, j_, /*stashing=*/false);
    if (route == nullptr) throw std::runtime_error("skip '" + key.second + "' was popped before it was stashed");
    Cell& cell = step_.cell(i_, j_);
    if (pass_ == Pass::Recompute) return cell.poppedLeaves.at(key);
    const StageContext& context = step_.context_;
    torch::Tensor tensor =
        step_.receive(step_.skipSpec(route->scheduleIndex, i_), context.rankOf(route->stashJ),
                      context.tags->tag(MessageKind::Skip, route->stashJ, i_, 0, route->scheduleIndex),
                      step_.copyLabel(OpKind::SkipCopy, i_, route->stashJ, route->popJ, false, route->scheduleIndex));
    torch::Tensor leaf = leafOf(tensor, true);
    cell.poppedLeaves[key] = leaf;
    return leaf;
  }

 private:
  RankStep& step_;
  std::int64_t i_;
  std::int64_t j_;
  Pass pass_;
  std::map<SkipKey, torch::Tensor> local_;
};

RankStep::RankStep(const StageContext& context, std::vector<Tensors> microBatches, std::vector<torch::Tensor> targets,
                   std::vector<std::int64_t> rows, const LossFn& lossFn, std::int64_t batchRows, std::uint64_t baseSeed)
    : context_(context),
      microBatches_(std::move(microBatches)),
      rows_(std::move(rows)),
      lossFn_(lossFn),
      batchRows_(batchRows),
      baseSeed_(baseSeed),
      n_(context.schedule->partitions()) {
  if (context_.partitions.count(n_ - 1) > 0) {
    for (std::size_t i = 0; i < targets.size(); ++i) cell(static_cast<std::int64_t>(i), n_ - 1).target = targets[i];
  }
}

RankStep::Cell& RankStep::cell(std::int64_t i, std::int64_t j) { return cells_[{i, j}]; }

const TensorSpecs& RankStep::activationSpecs(std::int64_t j, std::int64_t i) const {
  return context_.shapes->activations.at({j, rows_.at(static_cast<std::size_t>(i))});
}

const TensorSpec& RankStep::skipSpec(std::int64_t skip, std::int64_t i) const {
  return context_.shapes->skips.at({skip, rows_.at(static_cast<std::size_t>(i))});
}

std::string RankStep::copyLabel(OpKind kind, std::int64_t i, std::int64_t fromJ, std::int64_t toJ, bool gradient,
                                std::int64_t skip) const {
  Op op;
  op.kind = kind;
  op.i = i;
  op.j = fromJ;
  op.toJ = toJ;
  op.gradient = gradient;
  op.skip = skip;
  return context_.schedule->label(op);
}

void RankStep::run() {
  ScopedAllocationTag tag(context_.memoryTag);
  torch::AutoGradMode gradMode(true);
  const int rank = context_.mailbox->rank();
  const std::vector<OpIndex>& order = context_.schedule->deviceOrder(rank);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Op& op = context_.schedule->op(order[k]);
    try {
      // The next ops' messages may arrive while this one computes (posted receives let the
      // data move as soon as it is sent; a bounded window keeps their buffers few).
      for (std::size_t ahead = k == 0 ? 0 : kReceiveWindow; ahead <= kReceiveWindow && k + ahead < order.size(); ++ahead) {
        postReceivesOf(context_.schedule->op(order[k + ahead]));
      }
      switch (op.kind) {
        case OpKind::Forward: forwardOp(op); break;
        case OpKind::Recompute: recomputeOp(op); break;
        case OpKind::Backward: backwardOp(op); break;
        case OpKind::Loss: lossOp(op); break;
        case OpKind::Copy:
        case OpKind::SkipCopy: break;
      }
    } catch (const std::exception& error) {
      context_.mailbox->abandon();
      std::throw_with_nested(PipeError(context_.schedule->label(op) + " on partition " + std::to_string(op.j) +
                                           ", micro-batch " + std::to_string(op.i) + " failed: " + errorText(error),
                                       op.j, op.i));
    }
    recordMemory();
  }
  try {
    context_.mailbox->finishSends();
  } catch (const std::exception& error) {
    std::throw_with_nested(PipeError("finishing the step's sends failed: " + errorText(error), -1, -1));
  }
}

void RankStep::recordMemory() const {
  if (tracing(context_.tracer)) {
    context_.tracer->recordCounter(context_.deviceName, "memory", context_.tracer->nowNs(),
                                   static_cast<double>(liveBytes(context_.memoryTag) + context_.parameterBytes));
  }
}

void RankStep::traceMessage(bool sending, const torch::Tensor& tensor, int peer, std::uint32_t tag,
                            const std::string& label, TimeNs startNs) const {
  HostTracer* tracer = context_.tracer;
  TraceEvent span;
  span.kind = EventKind::Span;
  span.phase = Phase::Copy;
  span.name = (sending ? "send " : "receive ") + label;
  span.device = context_.deviceName;
  span.lane = sending ? "send" : "receive";
  span.startNs = startNs;
  span.durationNs = tracer->nowNs() - startNs;
  span.bytes = static_cast<Bytes>(tensor.numel() * tensor.element_size());
  span.args[sending ? "to_rank" : "from_rank"] = std::to_string(peer);
  // The arrow leaves when the send starts and lands when the receive ends.
  TraceEvent flow;
  flow.kind = sending ? EventKind::FlowStart : EventKind::FlowEnd;
  flow.name = label;
  flow.device = span.device;
  flow.lane = span.lane;
  flow.startNs = sending ? span.startNs : span.endNs();
  flow.correlationId = (context_.stepIndex << 32) | static_cast<std::int64_t>(tag);
  tracer->record(std::move(span));
  tracer->record(std::move(flow));
}

torch::Tensor RankStep::receive(const TensorSpec& spec, int fromRank, std::uint32_t tag, const std::string& label) {
  if (!tracing(context_.tracer) || fromRank == context_.mailbox->rank()) {
    return context_.mailbox->receive(spec, fromRank, tag, context_.device);
  }
  const TimeNs startNs = context_.tracer->nowNs();
  torch::Tensor tensor = context_.mailbox->receive(spec, fromRank, tag, context_.device);
  traceMessage(/*sending=*/false, tensor, fromRank, tag, label, startNs);
  return tensor;
}

void RankStep::send(const torch::Tensor& tensor, int toRank, std::uint32_t tag, const std::string& label) {
  if (!tracing(context_.tracer) || toRank == context_.mailbox->rank()) {
    context_.mailbox->send(tensor, toRank, tag);
    return;
  }
  const TimeNs startNs = context_.tracer->nowNs();
  context_.mailbox->send(tensor, toRank, tag);
  traceMessage(/*sending=*/true, tensor, toRank, tag, label, startNs);
}

void RankStep::sendGradients(const Tensors& grads, const TensorSpecs& specs, int toRank, MessageKind kind,
                             std::int64_t edge, std::int64_t i, std::int64_t skip, const std::string& label) {
  for (std::size_t k = 0; k < specs.size(); ++k) {
    if (!carriesGradient(specs[k])) continue;
    torch::Tensor grad = k < grads.size() ? grads[k] : torch::Tensor();
    if (!grad.defined()) {
      grad = torch::zeros(specs[k].shape, torch::TensorOptions().dtype(specs[k].dtype).device(context_.device));
    }
    send(grad, toRank, context_.tags->tag(kind, edge, i, static_cast<std::int64_t>(k), skip), label);
  }
}

Tensors RankStep::receiveGradients(const TensorSpecs& specs, int fromRank, MessageKind kind, std::int64_t edge,
                                   std::int64_t i, std::int64_t skip, const std::string& label) {
  Tensors grads;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    grads.push_back(carriesGradient(specs[k])
                        ? receive(specs[k], fromRank, context_.tags->tag(kind, edge, i, static_cast<std::int64_t>(k), skip),
                                  label)
                        : torch::Tensor());
  }
  return grads;
}

void RankStep::postReceivesOf(const Op& op) {
  Mailbox& mailbox = *context_.mailbox;
  const MessageTags& tags = *context_.tags;
  const std::int64_t i = op.i;
  const std::int64_t j = op.j;
  if (op.kind == OpKind::Forward) {
    if (j > 0) {
      const TensorSpecs& specs = activationSpecs(j - 1, i);
      for (std::size_t k = 0; k < specs.size(); ++k) {
        mailbox.post(specs[k], context_.rankOf(j - 1), tags.tag(MessageKind::Activation, j - 1, i, static_cast<std::int64_t>(k)));
      }
    }
    for (const auto& route : context_.routes) {
      if (route.popJ != j || route.stashJ == j) continue;
      mailbox.post(skipSpec(route.scheduleIndex, i), context_.rankOf(route.stashJ),
                   tags.tag(MessageKind::Skip, route.stashJ, i, 0, route.scheduleIndex));
    }
  } else if (op.kind == OpKind::Backward) {
    if (j + 1 < n_) {
      const TensorSpecs& specs = activationSpecs(j, i);
      for (std::size_t k = 0; k < specs.size(); ++k) {
        if (!carriesGradient(specs[k])) continue;
        mailbox.post(specs[k], context_.rankOf(j + 1), tags.tag(MessageKind::Gradient, j, i, static_cast<std::int64_t>(k)));
      }
    }
    for (const auto& route : context_.routes) {
      if (route.stashJ != j || route.popJ == j || !carriesGradient(skipSpec(route.scheduleIndex, i))) continue;
      mailbox.post(skipSpec(route.scheduleIndex, i), context_.rankOf(route.popJ),
                   tags.tag(MessageKind::SkipGradient, route.stashJ, i, 0, route.scheduleIndex));
    }
  }
}

Tensors RankStep::runPartition(std::int64_t i, std::int64_t j, Tensors inputs, Pass pass) {
  const Partition& partition = context_.partition(j);
  Tracker tracker(*this, i, j, pass);
  ScopedSkipTracker scope(&tracker);
  std::optional<SeededRngScope> rng;
  if (partition.stochastic) rng.emplace(cellSeed(baseSeed_, i, j), partition.device);
  return runLayers(partition, std::move(inputs));
}

void RankStep::forwardOp(const Op& op) {
  const std::int64_t i = op.i;
  const std::int64_t j = op.j;
  Tensors inputs;
  if (j == 0) {
    inputs = std::move(microBatches_.at(static_cast<std::size_t>(i)));
  } else {
    const TensorSpecs& specs = activationSpecs(j - 1, i);
    const std::string label = copyLabel(OpKind::Copy, i, j - 1, j, false, -1);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      inputs.push_back(receive(specs[k], context_.rankOf(j - 1),
                               context_.tags->tag(MessageKind::Activation, j - 1, i, static_cast<std::int64_t>(k)), label));
    }
  }
  const bool checkpointed = context_.schedule->checkpointed(i);
  Tensors outputs;
  {
    OpSpan span(tracing(context_.tracer) ? context_.tracer : nullptr, op.kind, i, j, j, context_.deviceName,
                "partition " + std::to_string(j), context_.schedule->label(op));
    Cell& own = cell(i, j);
    for (auto& input : inputs) input = leafOf(input, j > 0 || input.requires_grad());
    own.inputs = inputs;
    torch::AutoGradMode gradMode(!checkpointed);
    outputs = runPartition(i, j, std::move(inputs), Pass::Forward);
  }
  if (j + 1 < n_) {
    if (specsOf(outputs) != activationSpecs(j, i)) {
      throw std::runtime_error("stage " + std::to_string(j) + " returned other shapes or dtypes for micro-batch " +
                               std::to_string(i) + " than at set-up; the process layout needs every micro-batch of " +
                               std::to_string(rows_[static_cast<std::size_t>(i)]) + " rows to give the same shapes");
    }
    const std::string label = copyLabel(OpKind::Copy, i, j, j + 1, false, -1);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      send(outputs[k], context_.rankOf(j + 1),
           context_.tags->tag(MessageKind::Activation, j, i, static_cast<std::int64_t>(k)), label);
    }
  }
  if (!checkpointed || j + 1 == n_) cell(i, j).outputs = std::move(outputs);
}

void RankStep::recomputeOp(const Op& op) {
  OpSpan span(tracing(context_.tracer) ? context_.tracer : nullptr, op.kind, op.i, op.j, op.j, context_.deviceName,
              "partition " + std::to_string(op.j), context_.schedule->label(op));
  Cell& own = cell(op.i, op.j);
  RecomputeScope recomputing;
  Tensors outputs = runPartition(op.i, op.j, own.inputs, Pass::Recompute);
  if (op.j == n_ - 1) {
    own.loss = weightedLoss(outputs, own.target);  // loss(i) ran without a graph
    return;
  }
  own.recomputed = std::move(outputs);
}

torch::Tensor RankStep::weightedLoss(const Tensors& outputs, const torch::Tensor& target) const {
  if (outputs.size() != 1) {
    throw std::invalid_argument("step() needs the last layer to return one tensor (it returned " +
                                std::to_string(outputs.size()) + ")");
  }
  torch::Tensor loss = lossFn_(outputs.front(), target);
  if (!loss.defined() || loss.numel() != 1) {
    throw std::invalid_argument("the loss function must return a scalar");
  }
  const double weight = static_cast<double>(target.size(0)) / static_cast<double>(batchRows_);
  return loss.reshape({}) * weight;
}

void RankStep::lossOp(const Op& op) {
  Cell& own = cell(op.i, n_ - 1);
  Tensors outputs = std::move(own.outputs);
  OpSpan span(tracing(context_.tracer) ? context_.tracer : nullptr, op.kind, op.i, op.j, op.j, context_.deviceName,
              "partition " + std::to_string(op.j), context_.schedule->label(op));
  const bool keepGraph = !context_.schedule->checkpointed(op.i);
  torch::Tensor loss;
  {
    torch::AutoGradMode gradMode(keepGraph);
    loss = weightedLoss(outputs, own.target);
  }
  lossValues_.push_back(loss.detach());
  if (keepGraph) own.loss = std::move(loss);
}

void RankStep::backwardOp(const Op& op) {
  const std::int64_t i = op.i;
  const std::int64_t j = op.j;
  Tensors outputGrads;
  if (j + 1 < n_) {
    outputGrads = receiveGradients(activationSpecs(j, i), context_.rankOf(j + 1), MessageKind::Gradient, j, i, -1,
                                   copyLabel(OpKind::Copy, i, j + 1, j, true, -1));
  }
  std::map<SkipKey, torch::Tensor> stashGrads;
  for (const auto& route : context_.routes) {
    if (route.stashJ != j || route.popJ == j) continue;
    const TensorSpec& spec = skipSpec(route.scheduleIndex, i);
    if (!carriesGradient(spec)) continue;
    stashGrads[route.key] = receiveGradients({spec}, context_.rankOf(route.popJ), MessageKind::SkipGradient,
                                             route.stashJ, i, route.scheduleIndex,
                                             copyLabel(OpKind::SkipCopy, i, route.popJ, j, true, route.scheduleIndex))
                                .front();
  }
  Cell& own = cell(i, j);
  Tensors inputGrads;
  std::vector<std::pair<const PartitionSkipRoute*, torch::Tensor>> popGrads;
  {
    OpSpan span(tracing(context_.tracer) ? context_.tracer : nullptr, op.kind, i, j, j, context_.deviceName,
                "partition " + std::to_string(j), context_.schedule->label(op));
    std::vector<torch::Tensor> tensors;
    std::vector<torch::Tensor> grads;
    if (j + 1 == n_ && own.loss.defined() && own.loss.requires_grad()) {
      tensors.push_back(own.loss);
      grads.push_back(torch::ones_like(own.loss));
    }
    const Tensors& graphOutputs = context_.schedule->checkpointed(i) ? own.recomputed : own.outputs;
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
    if (!tensors.empty()) torch::autograd::backward(tensors, grads);
    for (const auto& input : own.inputs) inputGrads.push_back(input.requires_grad() ? input.grad() : torch::Tensor());
    for (const auto& route : context_.routes) {
      if (route.popJ == j && route.stashJ != j) {
        auto leaf = own.poppedLeaves.find(route.key);
        popGrads.emplace_back(&route, leaf != own.poppedLeaves.end() && leaf->second.requires_grad() ? leaf->second.grad()
                                                                                                       : torch::Tensor());
      }
    }
  }
  cells_.erase({i, j});
  if (j > 0) {
    sendGradients(inputGrads, activationSpecs(j - 1, i), context_.rankOf(j - 1), MessageKind::Gradient, j - 1, i, -1,
                  copyLabel(OpKind::Copy, i, j, j - 1, true, -1));
  }
  for (auto& [route, grad] : popGrads) {
    sendGradients({grad}, {skipSpec(route->scheduleIndex, i)}, context_.rankOf(route->stashJ), MessageKind::SkipGradient,
                  route->stashJ, i, route->scheduleIndex,
                  copyLabel(OpKind::SkipCopy, i, j, route->stashJ, true, route->scheduleIndex));
  }
}

torch::Tensor RankStep::lossSum() const {
  if (lossValues_.empty()) return {};
  torch::NoGradGuard noGrad;
  return torch::stack(lossValues_).sum();
}

}  // namespace pipeprof
