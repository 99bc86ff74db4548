// The messages between ranks: tags, the agreed tensor shapes, and a mailbox over the transport.
#include "ranks/stage_messages.h"

#include "transport/control_tags.h"

#include <stdexcept>

namespace pipeprof {

std::int64_t specHeaderLength() { return 1 + kMaxBoundaryTensors * (2 + kMaxTensorDims); }

TensorSpecs specsOf(const Tensors& tensors) {
  if (static_cast<std::int64_t>(tensors.size()) > kMaxBoundaryTensors) {
    throw std::invalid_argument("a stage boundary carries " + std::to_string(tensors.size()) +
                                " tensors; the process layout passes at most " + std::to_string(kMaxBoundaryTensors));
  }
  TensorSpecs specs;
  for (const torch::Tensor& tensor : tensors) {
    if (!tensor.defined())
      throw std::invalid_argument("a stage returned an undefined tensor, which no rank can receive");
    if (tensor.dim() > kMaxTensorDims) {
      throw std::invalid_argument("a tensor crossing a stage boundary has " + std::to_string(tensor.dim()) +
                                  " dimensions; the process layout passes at most " + std::to_string(kMaxTensorDims));
    }
    specs.push_back({tensor.sizes().vec(), tensor.scalar_type()});
  }
  return specs;
}

torch::Tensor zerosOf(const TensorSpec& spec, const torch::Device& device) {
  return torch::zeros(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(device));
}

torch::Tensor encodeSpecs(const TensorSpecs& specs) {
  torch::Tensor header = torch::zeros({specHeaderLength()}, torch::kLong);
  auto values = header.accessor<std::int64_t, 1>();
  values[0] = static_cast<std::int64_t>(specs.size());
  std::int64_t at = 1;
  for (const TensorSpec& spec : specs) {
    values[at] = static_cast<std::int64_t>(spec.dtype);
    values[at + 1] = static_cast<std::int64_t>(spec.shape.size());
    for (std::size_t k = 0; k < spec.shape.size(); ++k) values[at + 2 + static_cast<std::int64_t>(k)] = spec.shape[k];
    at += 2 + kMaxTensorDims;
  }
  return header;
}

TensorSpecs decodeSpecs(const torch::Tensor& header) {
  auto values = header.accessor<std::int64_t, 1>();
  const std::int64_t count = values[0];
  if (count < 0 || count > kMaxBoundaryTensors) {
    throw std::runtime_error("a shape header announced " + std::to_string(count) + " tensors");
  }
  TensorSpecs specs;
  std::int64_t at = 1;
  for (std::int64_t k = 0; k < count; ++k) {
    TensorSpec spec;
    spec.dtype = static_cast<torch::ScalarType>(values[at]);
    const std::int64_t dims = values[at + 1];
    if (dims < 0 || dims > kMaxTensorDims)
      throw std::runtime_error("a shape header announced " + std::to_string(dims) + " dims");
    for (std::int64_t d = 0; d < dims; ++d) spec.shape.push_back(values[at + 2 + d]);
    specs.push_back(std::move(spec));
    at += 2 + kMaxTensorDims;
  }
  return specs;
}

MessageTags::MessageTags(std::int64_t stages, std::int64_t microBatches, std::int64_t skips)
    : stages_(stages), microBatches_(microBatches), skips_(skips) {
  const double largest = 6.0 * static_cast<double>(skips + 1) * static_cast<double>(stages) *
                         static_cast<double>(microBatches) * static_cast<double>(kMaxBoundaryTensors);
  if (largest >= static_cast<double>(kControlTagBase)) {
    throw std::invalid_argument("too many messages per step for c10d's tags (" + std::to_string(stages) + " stages, " +
                                std::to_string(microBatches) + " micro-batches, " + std::to_string(skips) +
                                " skips): use fewer chunks");
  }
}

std::uint32_t MessageTags::tag(MessageKind kind, std::int64_t edge, std::int64_t i, std::int64_t tensor,
                               std::int64_t skip) const {
  std::int64_t value = static_cast<std::int64_t>(kind) * (skips_ + 1) + (skip + 1);
  value = value * stages_ + edge;
  value = value * microBatches_ + i;
  value = value * kMaxBoundaryTensors + tensor;
  return static_cast<std::uint32_t>(value);
}

void Mailbox::send(const torch::Tensor& tensor, int toRank, std::uint32_t tag) {
  if (toRank == transport_.rank()) {
    toSelf_[tag].push_back(tensor);
    return;
  }
  torch::Tensor message = tensor.detach().to(transport_.device()).contiguous();
  totals_.sentBytes += static_cast<Bytes>(message.numel() * message.element_size());
  ++totals_.messagesSent;
  inFlight_.push_back(transport_.send(message, toRank, tag));
}

void Mailbox::post(const TensorSpec& spec, int fromRank, std::uint32_t tag) {
  if (fromRank == transport_.rank() || posted_.count({fromRank, tag}) > 0) return;
  Posted posted;
  posted.tensor = torch::empty(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(transport_.device()));
  posted.pending = transport_.postReceive(posted.tensor, fromRank, tag);
  posted_.emplace(std::make_pair(fromRank, tag), std::move(posted));
}

torch::Tensor Mailbox::receive(const TensorSpec& spec, int fromRank, std::uint32_t tag, const torch::Device& device) {
  if (fromRank == transport_.rank()) {
    auto it = toSelf_.find(tag);
    if (it == toSelf_.end() || it->second.empty()) {
      throw std::logic_error("rank " + std::to_string(fromRank) + " waits for a message to itself it never sent (tag " +
                             std::to_string(tag) + ")");
    }
    torch::Tensor tensor = std::move(it->second.front());
    it->second.erase(it->second.begin());
    if (it->second.empty()) toSelf_.erase(it);
    return tensor;
  }
  torch::Tensor tensor;
  auto posted = posted_.find({fromRank, tag});
  if (posted != posted_.end()) {
    posted->second.pending->wait();
    tensor = std::move(posted->second.tensor);
    posted_.erase(posted);
  } else {
    tensor = torch::empty(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(transport_.device()));
    transport_.receive(tensor, fromRank, tag);
  }
  totals_.receivedBytes += static_cast<Bytes>(tensor.numel() * tensor.element_size());
  ++totals_.messagesReceived;
  return tensor.device() == device ? tensor : tensor.to(device);
}

void Mailbox::finishSends() {
  for (auto& send : inFlight_) send->wait();
  inFlight_.clear();
}

void Mailbox::abandon() {
  inFlight_.clear();
  posted_.clear();
  toSelf_.clear();
}

}  // namespace pipeprof
