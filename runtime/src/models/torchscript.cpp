// Loading a user's model from a TorchScript file: a Sequential's children are its layers, any other
// forward is split at its submodule calls (graph_model.h).
#include "models/zoo.h"

#include "models/graph_model.h"
#include "models/graph_split.h"
#include "models/imported_task.h"
#include "stage/shared_parameters.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <memory>
#include <stdexcept>

namespace pipeprof {
namespace {

/// One child of the scripted Sequential as a layer: forwards to the scripted module and
/// registers its parameters and buffers (the same tensors), so moving, training and
/// gradients work as for a native layer.
class ScriptedLayerImpl : public torch::nn::Module, public ReplicaHolder {
 public:
  explicit ScriptedLayerImpl(torch::jit::Module module) : module_(std::move(module)) {
    for (const auto& parameter : module_.named_parameters(/*recurse=*/true)) {
      register_parameter(flatName(parameter.name), parameter.value, parameter.value.requires_grad());
    }
    for (const auto& buffer : module_.named_buffers(/*recurse=*/true)) {
      register_buffer(flatName(buffer.name), buffer.value);
    }
  }

  /// Runs the scripted forward in TorchScript's interpreter without its optimizing passes (the
  /// guard is the calling thread's). Optimized, the executor changes a graph after its first
  /// runs (differentiable subgraphs that save more for backward): a ViT block's forward with a
  /// graph then kept 36 MiB more than the same forward as a recompute, so the layer profiler's
  /// early runs and a step's later ones differed, and it ran 25% slower.
  torch::Tensor forward(const torch::Tensor& input) {
    torch::jit::GraphOptimizerEnabledGuard plain(false);
    return module_.forward({input}).toTensor();
  }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

  /// The scripted slots holding `shared` (each submodule has its own) and this layer's own
  /// registration of them.
  void holdReplica(const torch::Tensor& shared, const torch::Tensor& replica) override {
    std::vector<std::string> slots;
    for (const auto& parameter : module_.named_parameters(/*recurse=*/true)) {
      if (parameter.value.is_same(shared)) slots.push_back(parameter.name);
    }
    for (const std::string& name : slots) {
      torch::jit::Module owner = module_;
      std::string slot = name;
      for (std::size_t dot = slot.find('.'); dot != std::string::npos; dot = slot.find('.')) {
        owner = owner.attr(slot.substr(0, dot)).toModule();
        slot = slot.substr(dot + 1);
      }
      owner.setattr(slot, replica);
      parameters_[flatName(name)] = replica;
    }
  }

 private:
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
  if (scripted.named_children().size() == 0) {
    throw std::invalid_argument("TorchScript model '" + path +
                                "' has no submodules; pipeprof splits a model into layers at its submodule calls");
  }
  const ImportedTask task = importedTask(scripted, options, path);
  Model model;
  model.name = path;
  if (forwardChainsItsChildren(scripted)) {
    for (const auto& child : scripted.named_children()) {
      model.sequential->push_back(std::string(child.name), ScriptedLayer(child.value));
    }
  } else {
    addGraphLayers(scripted, path, model);
  }
  model.defaultBatch = 8;
  applyTask(task, model);
  return model;
}

}  // namespace pipeprof
