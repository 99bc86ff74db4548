// The set-up pass of a rank: the channel passes the shapes of what crosses stages, then which
// of them get gradients.
#include "ranks/shape_channel.h"

namespace pipeprof {
namespace {

// A Shapes message's tensor index: the specs of what goes forward, or the mask of what comes back.
constexpr std::int64_t kSpecsMessage = 0;
constexpr std::int64_t kGradientMaskMessage = 1;

Tensors zerosOf(const TensorSpecs& specs, const torch::Device& device) {
  Tensors tensors;
  for (const TensorSpec& spec : specs) tensors.push_back(zerosOf(spec, device));
  return tensors;
}

std::vector<bool> definedOf(const Tensors& tensors) {
  std::vector<bool> defined;
  for (const torch::Tensor& tensor : tensors) defined.push_back(tensor.defined());
  return defined;
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

std::vector<bool> ShapeChannel::receiveMask(std::size_t size, int fromRank, std::uint32_t tag) {
  const TensorSpec spec{{static_cast<std::int64_t>(size)}, torch::kLong};
  const torch::Tensor mask = context_.mailbox->receive(spec, fromRank, tag, torch::kCPU);
  std::vector<bool> values;
  for (std::int64_t k = 0; k < mask.numel(); ++k) values.push_back(mask[k].item<std::int64_t>() != 0);
  return values;
}

void ShapeChannel::sendMask(const std::vector<bool>& mask, int toRank, std::uint32_t tag) {
  torch::Tensor message = torch::zeros({static_cast<std::int64_t>(mask.size())}, torch::kLong);
  for (std::size_t k = 0; k < mask.size(); ++k) message[static_cast<std::int64_t>(k)] = mask[k] ? 1 : 0;
  context_.mailbox->send(message, toRank, tag);
}

Tensors ShapeChannel::receiveActivations(std::int64_t i, std::int64_t j) {
  const TensorSpecs specs =
      receiveSpecs(context_.rankOf(j - 1), context_.tags->tag(MessageKind::Shapes, j - 1, i, kSpecsMessage));
  shapes_.activations[{j - 1, rowsOf(i)}] = specs;
  return zerosOf(specs, context_.device);
}

void ShapeChannel::sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) {
  const TensorSpecs specs = specsOf(outputs);
  shapes_.activations[{j, rowsOf(i)}] = specs;
  sendSpecs(specs, context_.rankOf(j + 1), context_.tags->tag(MessageKind::Shapes, j, i, kSpecsMessage));
}

void ShapeChannel::sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) {
  const TensorSpecs specs = specsOf({tensor});
  shapes_.skips[{route.scheduleIndex, rowsOf(i)}] = specs.front();
  sendSpecs(specs, context_.rankOf(route.popJ),
            context_.tags->tag(MessageKind::Shapes, route.stashJ, i, kSpecsMessage, route.scheduleIndex));
}

torch::Tensor ShapeChannel::receiveSkip(const StageSkipRoute& route, std::int64_t i) {
  const TensorSpecs specs =
      receiveSpecs(context_.rankOf(route.stashJ),
                   context_.tags->tag(MessageKind::Shapes, route.stashJ, i, kSpecsMessage, route.scheduleIndex));
  shapes_.skips[{route.scheduleIndex, rowsOf(i)}] = specs.front();
  return zerosOf(specs.front(), context_.device);
}

Tensors ShapeChannel::receiveOutputGrads(std::int64_t i, std::int64_t j) {
  const TensorSpecs& specs = shapes_.activations.at({j, rowsOf(i)});
  const std::vector<bool> mask = receiveMask(specs.size(), context_.rankOf(j + 1),
                                             context_.tags->tag(MessageKind::Shapes, j, i, kGradientMaskMessage));
  shapes_.activationGradients[{j, rowsOf(i)}] = mask;
  Tensors grads;
  for (std::size_t k = 0; k < specs.size(); ++k)
    grads.push_back(mask[k] ? zerosOf(specs[k], context_.device) : torch::Tensor());
  return grads;
}

void ShapeChannel::sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) {
  if (j == 0) return;  // the step's input needs no gradient
  std::vector<bool> mask = definedOf(grads);
  mask.resize(shapes_.activations.at({j - 1, rowsOf(i)}).size(), false);
  shapes_.activationGradients[{j - 1, rowsOf(i)}] = mask;
  sendMask(mask, context_.rankOf(j - 1), context_.tags->tag(MessageKind::Shapes, j - 1, i, kGradientMaskMessage));
}

void ShapeChannel::sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) {
  shapes_.skipGradients[{route.scheduleIndex, rowsOf(i)}] = grad.defined();
  sendMask({grad.defined()}, context_.rankOf(route.stashJ),
           context_.tags->tag(MessageKind::Shapes, route.stashJ, i, kGradientMaskMessage, route.scheduleIndex));
}

torch::Tensor ShapeChannel::receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) {
  const bool gradient =
      receiveMask(1, context_.rankOf(route.popJ),
                  context_.tags->tag(MessageKind::Shapes, route.stashJ, i, kGradientMaskMessage, route.scheduleIndex))
          .front();
  shapes_.skipGradients[{route.scheduleIndex, rowsOf(i)}] = gradient;
  return gradient ? zerosOf(shapes_.skips.at({route.scheduleIndex, rowsOf(i)}), context_.device) : torch::Tensor();
}

}  // namespace pipeprof
