// Running a model's layers one at a time for the layer profiler (layer_runs.h).
#include "layer_profiling/layer_runs.h"

#include "stage/autocast.h"
#include "stage/stage_input.h"

#include <stdexcept>

namespace pipeprof::layer_profiling {

namespace {

Tensors asTensors(torch::nn::AnyValue& value, const std::string& layer) {
  if (const auto* tensor = value.try_get<torch::Tensor>()) return {*tensor};
  if (const auto* tensors = value.try_get<Tensors>()) return *tensors;
  throw std::invalid_argument("layer '" + layer +
                              "' returned neither a tensor nor a list of tensors; "
                              "the layer profiler needs one of those");
}

/// An empty tensor from x, keeping nothing of it: its backward makes x's gradient, ones, from x's
/// shape alone (and its own gradient, empty too, allocates nothing).
struct OnesGradient : torch::autograd::Function<OnesGradient> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["strides"] = x.strides().vec();
    ctx->saved_data["dtype"] = x.scalar_type();
    ctx->saved_data["device"] = x.device();
    return torch::empty({0}, x.options().dtype(torch::kFloat).requires_grad(false));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 const torch::autograd::variable_list& /*gradient*/) {
    const auto options = torch::TensorOptions()
                             .dtype(ctx->saved_data["dtype"].toScalarType())
                             .device(ctx->saved_data["device"].toDevice());
    return {
        torch::empty_strided(ctx->saved_data["sizes"].toIntVector(), ctx->saved_data["strides"].toIntVector(), options)
            .fill_(1)};
  }
};

}  // namespace

Layers layersOf(Model& model) {
  Layers layers;
  for (auto& layer : *model.sequential) layers.modules.push_back(&layer);
  layers.names = layerNames(model);
  return layers;
}

Tensors runLayer(torch::nn::AnyModule& layer, const Tensors& inputs, const std::string& name) {
  torch::nn::AnyValue value = inputs.size() == 1 ? layer.any_forward(inputs.front()) : layer.any_forward(inputs);
  return asTensors(value, name);
}

Tensors stageInputs(const Tensors& inputs, std::int64_t L) {
  Tensors out;
  out.reserve(inputs.size());
  for (const torch::Tensor& t : inputs) out.push_back(stageInputOf(t, L > 0).tensor);
  return out;
}

BackwardRoots backwardRoots(const Tensors& outputs) {
  BackwardRoots backward;
  for (const torch::Tensor& t : outputs) {
    if (t.defined() && t.requires_grad()) {
      backward.roots.push_back(t);
      backward.grads.push_back(torch::ones_like(t));
    }
  }
  return backward;
}

void runBackward(const BackwardRoots& backward) {
  AutocastPause pause;  // the backward's ops take the types the forward chose
  if (!backward.roots.empty()) torch::autograd::backward(backward.roots, backward.grads);
}

void backwardOf(const Tensors& outputs) { runBackward(backwardRoots(outputs)); }

Tensors onesGradientRoots(const Tensors& outputs) {
  Tensors roots;
  for (const torch::Tensor& t : outputs) {
    if (t.defined() && t.requires_grad()) roots.push_back(OnesGradient::apply(t));
  }
  return roots;
}

void runFromOnesGradientRoots(Tensors roots) {
  AutocastPause pause;
  Tensors empty;
  for (const torch::Tensor& root : roots) empty.push_back(torch::empty({0}, root.options()));
  if (!roots.empty()) torch::autograd::backward(roots, empty);
}

torch::autograd::edge_list gradientEdges(const Tensors& inputs) {
  torch::autograd::edge_list edges;
  for (const torch::Tensor& t : inputs) {
    edges.push_back(t.requires_grad() ? torch::autograd::impl::gradient_edge(t) : torch::autograd::Edge());
  }
  return edges;
}

}  // namespace pipeprof::layer_profiling
