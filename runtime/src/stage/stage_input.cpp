// A stage's input as autograd sees it: no copy, no leaf, its gradient kept by a sink node.
#include "stage/stage_input.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <string>
#include <utility>

namespace pipeprof {

/// The node a stage input's backward ends at: keeps the gradient autograd hands it (summed
/// over backward calls, as AccumulateGrad sums into a leaf's .grad(), and a slice of a larger
/// tensor copied, as AccumulateGrad copies it).
class InputGradientSink final : public torch::autograd::Node {
 public:
  explicit InputGradientSink(const torch::Tensor& input) { add_input_metadata(input); }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    torch::Tensor& incoming = grads.at(0);
    if (incoming.defined()) grad_ = grad_.defined() ? grad_ + incoming : gradientOfItsOwn(std::move(incoming));
    return {};
  }

  std::string name() const override { return "pipeprof::StageInputGradient"; }

  const torch::Tensor& grad() const { return grad_; }

 private:
  torch::Tensor grad_;
};

torch::Tensor gradientOfItsOwn(torch::Tensor grad) {
  if (!grad.defined() || !grad.has_storage()) return grad;
  const auto bytes = static_cast<std::size_t>(grad.numel()) * grad.element_size();
  return grad.storage().nbytes() > bytes ? grad.clone(at::MemoryFormat::Contiguous) : grad;
}

torch::Tensor StageInput::grad() const { return sink == nullptr ? torch::Tensor() : sink->grad(); }

torch::autograd::Edge StageInput::gradientEdge() const {
  return sink == nullptr ? torch::autograd::Edge() : torch::autograd::Edge(sink, 0);
}

torch::Tensor sinkGradientOf(const torch::Tensor& tensor) {
  if (!tensor.defined()) return {};
  const auto* sink =
      dynamic_cast<const InputGradientSink*>(torch::autograd::impl::gradient_edge(tensor).function.get());
  return sink == nullptr ? torch::Tensor() : sink->grad();
}

StageInput stageInputOf(const torch::Tensor& received, bool requiresGrad) {
  StageInput input;
  input.tensor = received.detach();
  if (requiresGrad && (input.tensor.is_floating_point() || input.tensor.is_complex())) {
    input.sink = std::make_shared<InputGradientSink>(input.tensor);
    torch::autograd::impl::set_gradient_edge(input.tensor, torch::autograd::Edge(input.sink, 0));
  }
  return input;
}

std::vector<torch::Tensor> tensorsOf(const std::vector<StageInput>& inputs) {
  std::vector<torch::Tensor> tensors;
  tensors.reserve(inputs.size());
  for (const StageInput& input : inputs) tensors.push_back(input.tensor);
  return tensors;
}

std::vector<std::uint32_t> versionsOf(const std::vector<torch::Tensor>& inputs) {
  std::vector<std::uint32_t> versions;
  versions.reserve(inputs.size());
  for (const torch::Tensor& input : inputs) versions.push_back(input.defined() ? input._version() : 0);
  return versions;
}

bool writtenSince(const std::vector<torch::Tensor>& inputs, const std::vector<std::uint32_t>& versions) {
  for (std::size_t k = 0; k < inputs.size() && k < versions.size(); ++k) {
    if (inputs[k].defined() && inputs[k]._version() != versions[k]) return true;
  }
  return false;
}

}  // namespace pipeprof
