// The messages between ranks: tags, the agreed tensor shapes, and a mailbox over the transport.
#pragma once

#include "stage/microbatch.h"

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/transfer_totals.h>
#include <pipeprof/runtime/transport.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

/// The shape and dtype of one tensor crossing a stage boundary.
struct TensorSpec {
  std::vector<std::int64_t> shape;
  torch::ScalarType dtype = torch::kFloat;
  friend bool operator==(const TensorSpec& a, const TensorSpec& b) { return a.shape == b.shape && a.dtype == b.dtype; }
};
using TensorSpecs = std::vector<TensorSpec>;

/// At most this many tensors cross one boundary (one message each), with at most this many dims.
inline constexpr std::int64_t kMaxBoundaryTensors = 8;
inline constexpr std::int64_t kMaxTensorDims = 8;

/// The specs of tensors as one int64 tensor (a fixed-size header message): count, then per
/// tensor dtype, rank and sizes. Throws std::invalid_argument past the limits above, naming them.
TensorSpecs specsOf(const Tensors& tensors);
torch::Tensor encodeSpecs(const TensorSpecs& specs);
/// A tensor of zeros of `spec` on `device`.
torch::Tensor zerosOf(const TensorSpec& spec, const torch::Device& device);
TensorSpecs decodeSpecs(const torch::Tensor& header);
std::int64_t specHeaderLength();

/// What a message carries. Activation edges are named by the sending stage of the forward
/// (stage j -> j+1), skips by their index in ScheduleSpec::skips.
/// SharedGradient: once per step from each rank holding a shared parameter (edge: the sender).
enum class MessageKind { Shapes = 0, Activation = 1, Gradient = 2, Skip = 3, SkipGradient = 4, SharedGradient = 5 };

/// Tags are unique per step: (kind, skip, stage edge, micro-batch, tensor). The schedule fixes
/// n, m and the skip count, so every rank computes the same tag. Throws std::invalid_argument
/// when they do not fit below kControlTagBase (transport/control_tags.h).
class MessageTags {
 public:
  MessageTags(std::int64_t stages, std::int64_t microBatches, std::int64_t skips);
  std::uint32_t tag(MessageKind kind, std::int64_t edge, std::int64_t i, std::int64_t tensor = 0,
                    std::int64_t skip = -1) const;

 private:
  std::int64_t stages_;
  std::int64_t microBatches_;
  std::int64_t skips_;
};

/// Sends and receives of one rank: messages to itself stay in memory (a rank's two virtual
/// stages hand tensors over as in one process), others go through the transport. Sends are
/// kept in flight until finishSends(). Counts the bytes moved.
class Mailbox {
 public:
  explicit Mailbox(Transport& transport) : transport_(transport) {}

  int rank() const { return transport_.rank(); }
  /// Sends tensor (made contiguous on the transport's device) to `toRank`.
  void send(const torch::Tensor& tensor, int toRank, std::uint32_t tag);
  /// Posts the receive of a tensor of `spec` from `fromRank` (nothing for messages to itself),
  /// so that the data moves as soon as the peer sends it; receive() then takes it.
  void post(const TensorSpec& spec, int fromRank, std::uint32_t tag);
  /// Receives a tensor of `spec` from `fromRank` (the one posted, if it was), on `device`.
  torch::Tensor receive(const TensorSpec& spec, int fromRank, std::uint32_t tag, const torch::Device& device);
  /// Waits for every send in flight.
  void finishSends();
  /// Drops the sends in flight and the messages to itself (after a failure).
  void abandon();
  const TransferTotals& totals() const { return totals_; }
  Transport& transport() { return transport_; }

 private:
  Transport& transport_;
  std::vector<std::unique_ptr<PendingSend>> inFlight_;
  struct Posted {
    torch::Tensor tensor;
    std::unique_ptr<Transport::PendingReceive> pending;
  };
  std::map<std::pair<int, std::uint32_t>, Posted> posted_;  ///< (from rank, tag)
  std::map<std::uint32_t, std::vector<torch::Tensor>> toSelf_;
  TransferTotals totals_;
};

}  // namespace pipeprof
