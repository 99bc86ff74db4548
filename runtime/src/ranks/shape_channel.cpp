// The set-up pass of a rank: the channel passes the shapes of what crosses stages.
#include "ranks/shape_channel.h"

namespace pipeprof {
namespace {

Tensors zerosOf(const TensorSpecs& specs, const torch::Device& device) {
  Tensors tensors;
  for (const TensorSpec& spec : specs) {
    tensors.push_back(torch::zeros(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(device)));
  }
  return tensors;
}

}  // namespace

ShapeChannel::ShapeChannel(const RankChannelContext& context, AgreedShapes& shapes, std::vector<std::int64_t> rows)
    : context_(context), shapes_(shapes), rows_(std::move(rows)) {}

TensorSpecs ShapeChannel::receiveSpecs(int fromRank, std::uint32_t tag) {
  const TensorSpec header{{specHeaderLength()}, torch::kLong};
  return decodeSpecs(context_.mailbox->receive(header, fromRank, tag, torch::kCPU));
}

void ShapeChannel::sendSpecs(const TensorSpecs& specs, int toRank, std::uint32_t tag) {
  context_.mailbox->send(encodeSpecs(specs), toRank, tag);
}

Tensors ShapeChannel::receiveActivations(std::int64_t i, std::int64_t j) {
  const TensorSpecs specs = receiveSpecs(context_.rankOf(j - 1), context_.tags->tag(MessageKind::Shapes, j - 1, i));
  shapes_.activations[{j - 1, rows_.at(static_cast<std::size_t>(i))}] = specs;
  return zerosOf(specs, context_.device);
}

void ShapeChannel::sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) {
  const TensorSpecs specs = specsOf(outputs);
  shapes_.activations[{j, rows_.at(static_cast<std::size_t>(i))}] = specs;
  sendSpecs(specs, context_.rankOf(j + 1), context_.tags->tag(MessageKind::Shapes, j, i));
}

void ShapeChannel::sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) {
  const TensorSpecs specs = specsOf({tensor});
  shapes_.skips[{route.scheduleIndex, rows_.at(static_cast<std::size_t>(i))}] = specs.front();
  sendSpecs(specs, context_.rankOf(route.popJ),
            context_.tags->tag(MessageKind::Shapes, route.stashJ, i, 0, route.scheduleIndex));
}

torch::Tensor ShapeChannel::receiveSkip(const StageSkipRoute& route, std::int64_t i) {
  const TensorSpecs specs = receiveSpecs(
      context_.rankOf(route.stashJ), context_.tags->tag(MessageKind::Shapes, route.stashJ, i, 0, route.scheduleIndex));
  shapes_.skips[{route.scheduleIndex, rows_.at(static_cast<std::size_t>(i))}] = specs.front();
  return zerosOf(specs, context_.device).front();
}

}  // namespace pipeprof
