// The set-up pass of a rank: its stages run once per micro-batch size, and the channel passes
// the shapes of what crosses stages instead of the tensors, then which of them get gradients.
//
// Every message of a step has a shape and dtype agreed beforehand (rank_channel.h). To agree on
// them, each rank runs its stages' forwards on the StageCore (in eval mode) through a
// ShapeChannel: what a stage sends goes as a header of its specs (encodeSpecs), what a stage
// receives is zeros of the received specs, and both ends record the specs. The last stage's
// loss and every stage's backward (its I half: no weight gradient accumulates) then run in
// reverse stage order: what a stage sends back is a mask of which gradients it has, what it
// receives is zeros where the mask says one and undefined elsewhere, and both ends record the
// mask. So a step sends exactly the gradients the threaded Pipe hands over.
#pragma once

#include "ranks/rank_channel.h"
#include "stage/stage_core.h"

#include <cstdint>
#include <vector>

namespace pipeprof {

class ShapeChannel final : public ForwardChannel, public BackwardChannel {
 public:
  /// rows[r]: the rows of the r-th distinct micro-batch size (the core's micro-batch r).
  ShapeChannel(const RankChannelContext& context, AgreedShapes& shapes, std::vector<std::int64_t> rows);

  Tensors receiveActivations(std::int64_t i, std::int64_t j) override;
  void sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) override;
  void sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) override;
  torch::Tensor receiveSkip(const StageSkipRoute& route, std::int64_t i) override;

  Tensors receiveOutputGrads(std::int64_t i, std::int64_t j) override;
  void sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) override;
  void sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) override;
  torch::Tensor receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) override;

 private:
  TensorSpecs receiveSpecs(int fromRank, std::uint32_t tag);
  void sendSpecs(const TensorSpecs& specs, int toRank, std::uint32_t tag);
  std::vector<bool> receiveMask(std::size_t size, int fromRank, std::uint32_t tag);
  void sendMask(const std::vector<bool>& mask, int toRank, std::uint32_t tag);
  std::int64_t rowsOf(std::int64_t i) const { return rows_.at(static_cast<std::size_t>(i)); }

  const RankChannelContext& context_;
  AgreedShapes& shapes_;
  std::vector<std::int64_t> rows_;
};

}  // namespace pipeprof
