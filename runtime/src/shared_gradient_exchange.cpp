// Between ranks: one message pair per peer carries the gradients of the parameters both hold.
#include "shared_gradient_exchange.h"

#include <map>

namespace pipeprof {
namespace {

const SharedParameter::Copy* copyOn(const SharedParameter& parameter, std::int64_t d) {
  for (const SharedParameter::Copy& copy : parameter.copies) {
    if (copy.d == d) return &copy;
  }
  return nullptr;
}

}  // namespace

void exchangeSharedGradients(Mailbox& mailbox, const MessageTags& tags, const std::vector<SharedParameter>& shared,
                             int rank) {
  torch::NoGradGuard noGrad;
  // By peer: the parameters both hold, in `shared`'s order.
  std::map<int, std::vector<const SharedParameter*>> withPeer;
  for (const SharedParameter& parameter : shared) {
    if (copyOn(parameter, rank) == nullptr) continue;
    for (const SharedParameter::Copy& copy : parameter.copies) {
      if (copy.d != rank) withPeer[static_cast<int>(copy.d)].push_back(&parameter);
    }
  }
  if (withPeer.empty()) return;
  const auto ownGrad = [&](const SharedParameter& parameter) {
    const torch::Tensor& tensor = copyOn(parameter, rank)->tensor;
    return tensor.grad().defined() ? tensor.grad() : torch::zeros_like(tensor);
  };
  for (const auto& [peer, parameters] : withPeer) {
    std::vector<torch::Tensor> flat;
    for (const SharedParameter* parameter : parameters) flat.push_back(ownGrad(*parameter).reshape({-1}));
    mailbox.send(torch::cat(flat), peer, tags.tag(MessageKind::SharedGradient, rank, 0));
  }
  // Every copy's gradient of each parameter this rank holds, by device.
  std::map<const SharedParameter*, std::map<std::int64_t, torch::Tensor>> grads;
  for (const auto& [peer, parameters] : withPeer) {
    std::int64_t numel = 0;
    for (const SharedParameter* parameter : parameters) numel += copyOn(*parameter, rank)->tensor.numel();
    const torch::Tensor own = copyOn(*parameters.front(), rank)->tensor;
    const torch::Tensor received = mailbox.receive(TensorSpec{{numel}, own.scalar_type()}, peer,
                                                   tags.tag(MessageKind::SharedGradient, peer, 0), own.device());
    std::int64_t offset = 0;
    for (const SharedParameter* parameter : parameters) {
      const torch::Tensor& tensor = copyOn(*parameter, rank)->tensor;
      grads[parameter][peer] = received.narrow(0, offset, tensor.numel()).view(tensor.sizes());
      offset += tensor.numel();
    }
  }
  for (auto& [parameter, byDevice] : grads) {
    byDevice[rank] = ownGrad(*parameter);
    std::vector<torch::Tensor> ordered;
    for (const auto& [d, grad] : byDevice) ordered.push_back(grad);  // ascending device
    const torch::Tensor& tensor = copyOn(*parameter, rank)->tensor;
    const torch::Tensor total = sumInOrder(ordered, tensor);
    if (tensor.grad().defined()) {
      tensor.mutable_grad().copy_(total);
    } else {
      tensor.mutable_grad() = total;
    }
  }
  mailbox.finishSends();
}

}  // namespace pipeprof
