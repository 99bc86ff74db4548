// A rank's stage channel: the tensors that cross stages are messages over the transport.
#include "ranks/rank_channel.h"

#include "stage/op_receives.h"

#include <pipeprof/profiler/host_tracer.h>

#include <stdexcept>

namespace pipeprof {
namespace {

bool tracing(const HostTracer* tracer) { return tracer != nullptr && tracer->enabled(); }

}  // namespace

RankChannel::RankChannel(const RankChannelContext& context, std::vector<std::int64_t> rows)
    : context_(context), rows_(std::move(rows)) {}

const TensorSpecs& RankChannel::activationSpecs(std::int64_t j, std::int64_t i) const {
  return context_.shapes->activations.at({j, rows_.at(static_cast<std::size_t>(i))});
}

const TensorSpec& RankChannel::skipSpec(std::int64_t skip, std::int64_t i) const {
  return context_.shapes->skips.at({skip, rows_.at(static_cast<std::size_t>(i))});
}

const std::vector<bool>& RankChannel::activationGradients(std::int64_t j, std::int64_t i) const {
  return context_.shapes->activationGradients.at({j, rows_.at(static_cast<std::size_t>(i))});
}

bool RankChannel::skipGradient(std::int64_t skip, std::int64_t i) const {
  return context_.shapes->skipGradients.at({skip, rows_.at(static_cast<std::size_t>(i))});
}

std::string RankChannel::copyLabel(OpKind kind, std::int64_t i, std::int64_t fromJ, std::int64_t toJ, bool gradient,
                                   std::int64_t skip) const {
  return context_.schedule->label(copyOp(kind, i, fromJ, toJ, gradient, skip));
}

void RankChannel::traceMessage(bool sending, const torch::Tensor& tensor, int peer, std::uint32_t tag,
                               const std::string& label, TimeNs startNs, std::int64_t correlationId) const {
  HostTracer* tracer = context_.tracer;
  TraceEvent span;
  span.kind = EventKind::Span;
  span.phase = Phase::Copy;
  span.name = (sending ? "send " : "receive ") + label;
  span.device = context_.traceDevice;
  span.lane = sending ? "send" : "receive";
  span.correlationId = correlationId;  // its NCCL kernels' op (activity_converter.h)
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

torch::Tensor RankChannel::receive(const TensorSpec& spec, int fromRank, std::uint32_t tag, const std::string& label) {
  Mailbox& mailbox = *context_.mailbox;
  if (!tracing(context_.tracer) || fromRank == mailbox.rank())
    return mailbox.receive(spec, fromRank, tag, context_.device);
  // A posted receive launched its device work when it was posted, under the id it got then.
  const auto posted = postedCorrelations_.find({fromRank, tag});
  const std::int64_t correlationId =
      posted != postedCorrelations_.end() ? posted->second : context_.tracer->nextCorrelationId();
  if (posted != postedCorrelations_.end()) postedCorrelations_.erase(posted);
  const TimeNs startNs = context_.tracer->nowNs();
  torch::Tensor tensor;
  {
    const OpHookScope launches(context_.tracer, correlationId);
    tensor = mailbox.receive(spec, fromRank, tag, context_.device);
  }
  traceMessage(/*sending=*/false, tensor, fromRank, tag, label, startNs, correlationId);
  return tensor;
}

void RankChannel::send(const torch::Tensor& tensor, int toRank, std::uint32_t tag, const std::string& label) {
  Mailbox& mailbox = *context_.mailbox;
  if (!tracing(context_.tracer) || toRank == mailbox.rank()) {
    mailbox.send(tensor, toRank, tag);
    return;
  }
  const std::int64_t correlationId = context_.tracer->nextCorrelationId();
  const TimeNs startNs = context_.tracer->nowNs();
  {
    const OpHookScope launches(context_.tracer, correlationId);
    mailbox.send(tensor, toRank, tag);
  }
  traceMessage(/*sending=*/true, tensor, toRank, tag, label, startNs, correlationId);
}

void RankChannel::post(const TensorSpec& spec, int fromRank, std::uint32_t tag) {
  Mailbox& mailbox = *context_.mailbox;
  if (!tracing(context_.tracer) || fromRank == mailbox.rank()) {
    mailbox.post(spec, fromRank, tag);
    return;
  }
  const std::int64_t correlationId = context_.tracer->nextCorrelationId();
  const OpHookScope launches(context_.tracer, correlationId);
  mailbox.post(spec, fromRank, tag);
  postedCorrelations_[{fromRank, tag}] = correlationId;
}

void RankChannel::sendGradients(const Tensors& grads, const TensorSpecs& specs, const std::vector<bool>& travels,
                                int toRank, MessageKind kind, std::int64_t edge, std::int64_t i, std::int64_t skip,
                                const std::string& label, const std::string& what) {
  for (std::size_t k = 0; k < specs.size(); ++k) {
    torch::Tensor grad = k < grads.size() ? grads[k] : torch::Tensor();
    if (!travels.at(k)) {
      if (!grad.defined()) continue;
      throw std::runtime_error("a gradient reached tensor " + std::to_string(k) + " of " + what +
                               ", which the set-up pass (eval mode, on zeros) found none for: ranks send only the "
                               "gradients it found, so a stage whose gradients flow differently in training mode "
                               "cannot run as ranks");
    }
    // The receiver waits for a gradient it was promised: a zero one adds nothing to its backward.
    if (!grad.defined()) grad = zerosOf(specs[k], context_.device);
    send(grad, toRank, context_.tags->tag(kind, edge, i, static_cast<std::int64_t>(k), skip), label);
  }
}

Tensors RankChannel::receiveGradients(const TensorSpecs& specs, const std::vector<bool>& travels, int fromRank,
                                      MessageKind kind, std::int64_t edge, std::int64_t i, std::int64_t skip,
                                      const std::string& label) {
  Tensors grads;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    grads.push_back(
        travels.at(k)
            ? receive(specs[k], fromRank, context_.tags->tag(kind, edge, i, static_cast<std::int64_t>(k), skip), label)
            : torch::Tensor());
  }
  return grads;
}

void RankChannel::postReceivesOf(const Op& op) {
  const MessageTags& tags = *context_.tags;
  const std::int64_t i = op.i;
  const std::int64_t j = op.j;
  for (const OpReceive& receive : receivesOf(op, context_.schedule->stages(), *context_.routes)) {
    const int from = context_.rankOf(receive.fromJ);
    switch (receive.what) {
      case OpReceive::What::Activations:
      case OpReceive::What::OutputGradients: {
        const bool gradients = receive.what == OpReceive::What::OutputGradients;
        const std::int64_t edge = gradients ? j : j - 1;  // a message is tagged by the edge's first stage
        const TensorSpecs& specs = activationSpecs(edge, i);
        const std::vector<bool>* travels = gradients ? &activationGradients(edge, i) : nullptr;
        for (std::size_t k = 0; k < specs.size(); ++k) {
          if (travels != nullptr && !travels->at(k)) continue;
          post(specs[k], from,
               tags.tag(gradients ? MessageKind::Gradient : MessageKind::Activation, edge, i,
                        static_cast<std::int64_t>(k)));
        }
        break;
      }
      case OpReceive::What::Skip:
      case OpReceive::What::SkipGradient: {
        const StageSkipRoute& route = *receive.route;
        const TensorSpec& spec = skipSpec(route.scheduleIndex, i);
        const bool gradient = receive.what == OpReceive::What::SkipGradient;
        if (gradient && !skipGradient(route.scheduleIndex, i)) break;
        post(spec, from,
             tags.tag(gradient ? MessageKind::SkipGradient : MessageKind::Skip, route.stashJ, i, 0,
                      route.scheduleIndex));
        break;
      }
    }
  }
}

Tensors RankChannel::receiveActivations(std::int64_t i, std::int64_t j) {
  const TensorSpecs& specs = activationSpecs(j - 1, i);
  const std::string label = copyLabel(OpKind::Copy, i, j - 1, j, false, -1);
  Tensors inputs;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    inputs.push_back(receive(specs[k], context_.rankOf(j - 1),
                             context_.tags->tag(MessageKind::Activation, j - 1, i, static_cast<std::int64_t>(k)),
                             label));
  }
  return inputs;
}

void RankChannel::sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) {
  if (specsOf(outputs) != activationSpecs(j, i)) {
    throw std::runtime_error("stage " + std::to_string(j) + " returned other shapes or dtypes for micro-batch " +
                             std::to_string(i) + " than at set-up; the process layout needs every micro-batch of " +
                             std::to_string(rows_.at(static_cast<std::size_t>(i))) + " rows to give the same shapes");
  }
  const std::string label = copyLabel(OpKind::Copy, i, j, j + 1, false, -1);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    send(outputs[k], context_.rankOf(j + 1),
         context_.tags->tag(MessageKind::Activation, j, i, static_cast<std::int64_t>(k)), label);
  }
}

void RankChannel::sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) {
  send(tensor, context_.rankOf(route.popJ),
       context_.tags->tag(MessageKind::Skip, route.stashJ, i, 0, route.scheduleIndex),
       copyLabel(OpKind::SkipCopy, i, route.stashJ, route.popJ, false, route.scheduleIndex));
}

torch::Tensor RankChannel::receiveSkip(const StageSkipRoute& route, std::int64_t i) {
  return receive(skipSpec(route.scheduleIndex, i), context_.rankOf(route.stashJ),
                 context_.tags->tag(MessageKind::Skip, route.stashJ, i, 0, route.scheduleIndex),
                 copyLabel(OpKind::SkipCopy, i, route.stashJ, route.popJ, false, route.scheduleIndex));
}

Tensors RankChannel::receiveOutputGrads(std::int64_t i, std::int64_t j) {
  return receiveGradients(activationSpecs(j, i), activationGradients(j, i), context_.rankOf(j + 1),
                          MessageKind::Gradient, j, i, -1, copyLabel(OpKind::Copy, i, j + 1, j, true, -1));
}

void RankChannel::sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) {
  if (j == 0) return;  // the step's input needs no gradient
  sendGradients(grads, activationSpecs(j - 1, i), activationGradients(j - 1, i), context_.rankOf(j - 1),
                MessageKind::Gradient, j - 1, i, -1, copyLabel(OpKind::Copy, i, j, j - 1, true, -1),
                "stage " + std::to_string(j) + "'s inputs");
}

void RankChannel::sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) {
  sendGradients({std::move(grad)}, {skipSpec(route.scheduleIndex, i)}, {skipGradient(route.scheduleIndex, i)},
                context_.rankOf(route.stashJ), MessageKind::SkipGradient, route.stashJ, i, route.scheduleIndex,
                copyLabel(OpKind::SkipCopy, i, route.popJ, route.stashJ, true, route.scheduleIndex),
                "the skip '" + route.key.second + "' popped in stage " + std::to_string(route.popJ));
}

torch::Tensor RankChannel::receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) {
  return receiveGradients({skipSpec(route.scheduleIndex, i)}, {skipGradient(route.scheduleIndex, i)},
                          context_.rankOf(route.popJ), MessageKind::SkipGradient, route.stashJ, i, route.scheduleIndex,
                          copyLabel(OpKind::SkipCopy, i, route.popJ, route.stashJ, true, route.scheduleIndex))
      .front();
}

}  // namespace pipeprof
