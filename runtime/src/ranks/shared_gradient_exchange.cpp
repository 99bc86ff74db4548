// Between ranks: one message each way per pair of ranks carries the gradients of the parameters both hold.
#include "ranks/shared_gradient_exchange.h"

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

PeerGradients exchangeSharedGradients(Mailbox& mailbox, const MessageTags& tags,
                                      const std::vector<SharedParameter>& shared, int rank) {
  torch::NoGradGuard noGrad;
  // By peer: the parameters (indices into `shared`) both hold, in `shared`'s order.
  std::map<int, std::vector<std::size_t>> withPeer;
  for (std::size_t s = 0; s < shared.size(); ++s) {
    if (copyOn(shared[s], rank) == nullptr) continue;
    for (const SharedParameter::Copy& copy : shared[s].copies) {
      if (copy.d != rank) withPeer[static_cast<int>(copy.d)].push_back(s);
    }
  }
  PeerGradients peers;
  if (withPeer.empty()) return peers;
  for (const auto& [peer, parameters] : withPeer) {
    std::vector<torch::Tensor> flat;
    for (std::size_t s : parameters) {
      const torch::Tensor& tensor = copyOn(shared[s], rank)->tensor;
      flat.push_back((tensor.grad().defined() ? tensor.grad() : torch::zeros_like(tensor)).reshape({-1}));
    }
    mailbox.send(torch::cat(flat), peer, tags.tag(MessageKind::SharedGradient, rank, 0));
  }
  for (const auto& [peer, parameters] : withPeer) {
    std::int64_t numel = 0;
    for (std::size_t s : parameters) numel += copyOn(shared[s], rank)->tensor.numel();
    const torch::Tensor& own = copyOn(shared[parameters.front()], rank)->tensor;
    const torch::Tensor received = mailbox.receive(TensorSpec{{numel}, own.scalar_type()}, peer,
                                                   tags.tag(MessageKind::SharedGradient, peer, 0), own.device());
    std::int64_t offset = 0;
    for (std::size_t s : parameters) {
      const torch::Tensor& tensor = copyOn(shared[s], rank)->tensor;
      peers[s][peer] = received.narrow(0, offset, tensor.numel()).view(tensor.sizes());
      offset += tensor.numel();
    }
  }
  mailbox.finishSends();
  return peers;
}

}  // namespace pipeprof
