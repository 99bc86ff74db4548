// Loading a user's model from a TorchScript file whose top level is a Sequential.
#include "models/zoo.h"

#include "rng.h"

#include <torch/script.h>

#include <algorithm>
#include <stdexcept>

namespace pipeprof {
namespace {

/// One child of the scripted Sequential as a layer: forwards to the scripted module and
/// registers its parameters and buffers (the same tensors), so moving, training and
/// gradients work as for a native layer.
class ScriptedLayerImpl : public torch::nn::Module {
 public:
  explicit ScriptedLayerImpl(torch::jit::Module module) : module_(std::move(module)) {
    for (const auto& parameter : module_.named_parameters(/*recurse=*/true)) {
      register_parameter(flatName(parameter.name), parameter.value, parameter.value.requires_grad());
    }
    for (const auto& buffer : module_.named_buffers(/*recurse=*/true)) {
      register_buffer(flatName(buffer.name), buffer.value);
    }
  }

  torch::Tensor forward(const torch::Tensor& input) { return module_.forward({input}).toTensor(); }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

 private:
  static std::string flatName(std::string name) {
    std::replace(name.begin(), name.end(), '.', '_');
    return name;
  }

  torch::jit::Module module_;
};
TORCH_MODULE(ScriptedLayer);

}  // namespace

Model loadTorchScriptModel(const std::string& path, const ModelOptions& options) {
  torch::jit::Module scripted;
  try {
    scripted = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw std::invalid_argument("cannot load TorchScript model '" + path + "': " + e.what_without_backtrace());
  }
  const std::string type = scripted.type()->name() ? scripted.type()->name()->qualifiedName() : "";
  if (type.find("Sequential") == std::string::npos) {
    throw std::invalid_argument("TorchScript model '" + path + "' must have a Sequential at its top level (got '" +
                                type + "'); script an nn.Sequential whose children are the layers");
  }
  std::vector<std::int64_t> inputShape = options.inputShape;
  if (inputShape.empty() && scripted.hasattr("pipeprof_input_shape")) {
    inputShape = scripted.attr("pipeprof_input_shape").toIntVector();
  }
  if (inputShape.empty()) {
    throw std::invalid_argument("TorchScript model '" + path +
                                "' has no input shape: set ModelOptions::inputShape (the shape of one sample) or give "
                                "the scripted Sequential a `pipeprof_input_shape` list attribute");
  }
  Model model;
  model.name = path;
  for (const auto& child : scripted.named_children()) {
    model.sequential->push_back(std::string(child.name), ScriptedLayer(child.value));
  }
  if (model.sequential->size() == 0) {
    throw std::invalid_argument("TorchScript model '" + path + "' is an empty Sequential; it needs at least one layer");
  }
  model.defaultBatch = 8;
  model.makeBatch = [inputShape](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = makeCpuGenerator(static_cast<std::uint64_t>(seed));
    std::vector<std::int64_t> shape{batch};
    shape.insert(shape.end(), inputShape.begin(), inputShape.end());
    Batch b;
    b.input = torch::randn(shape, generator, torch::kFloat32);
    b.target = torch::zeros({batch}, torch::kFloat32);  // unused: the loss compares with zeros
    return b;
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& /*target*/) {
    return torch::mse_loss(output, torch::zeros_like(output));
  };
  return model;
}

}  // namespace pipeprof
