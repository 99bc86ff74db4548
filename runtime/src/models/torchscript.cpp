// Loading a user's model from a TorchScript file whose top level is a Sequential (or a subclass).
#include "models/zoo.h"

#include "models/imported_task.h"
#include "stage/shared_parameters.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <map>
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
  static std::string flatName(std::string name) {
    std::replace(name.begin(), name.end(), '.', '_');
    return name;
  }

  torch::jit::Module module_;
};
TORCH_MODULE(ScriptedLayer);

/// Whether the module's forward is a Sequential's: each child's forward once, in order, each on
/// the previous one's output, the last one's returned. A scripted nn.Sequential, or a subclass
/// that keeps its forward, compiles to exactly that chain.
bool forwardChainsItsChildren(const torch::jit::Module& scripted) {
  const auto method = scripted.find_method("forward");
  if (!method) return false;
  const std::shared_ptr<torch::jit::Graph> graph = method->graph();
  if (graph->inputs().size() != 2 || graph->outputs().size() != 1) return false;
  const torch::jit::Value* self = graph->inputs()[0];
  const torch::jit::Value* x = graph->inputs()[1];
  std::map<const torch::jit::Value*, std::string> children;  // what each GetAttr of self reads
  std::vector<std::string> called;
  for (torch::jit::Node* node : graph->nodes()) {
    if (node->kind() == c10::prim::GetAttr && node->input(0) == self) {
      children[node->output()] = node->s(c10::attr::name);
    } else if (node->kind() == c10::prim::CallMethod && node->s(c10::attr::name) == "forward" &&
               node->inputs().size() == 2 && children.count(node->input(0)) > 0 && node->input(1) == x) {
      called.push_back(children.at(node->input(0)));
      x = node->output();
    } else {
      return false;
    }
  }
  std::vector<std::string> expected;
  for (const auto& child : scripted.named_children()) expected.push_back(child.name);
  return graph->outputs()[0] == x && called == expected;
}

}  // namespace

Model loadTorchScriptModel(const std::string& path, const ModelOptions& options) {
  torch::jit::Module scripted;
  try {
    scripted = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw std::invalid_argument("cannot load TorchScript model '" + path + "': " + e.what_without_backtrace());
  }
  const std::string type = scripted.type()->name() ? scripted.type()->name()->qualifiedName() : "";
  if (scripted.named_children().size() == 0) {
    throw std::invalid_argument("TorchScript model '" + path +
                                "' has no children; it needs a Sequential of at least "
                                "one layer");
  }
  if (!forwardChainsItsChildren(scripted)) {
    throw std::invalid_argument("TorchScript model '" + path +
                                "' must be an nn.Sequential or a subclass that keeps "
                                "its forward (got '" +
                                type +
                                "', whose forward does more than run its children in "
                                "order); script an nn.Sequential whose children are the layers");
  }
  const ImportedTask task = importedTask(scripted, options, path);
  Model model;
  model.name = path;
  for (const auto& child : scripted.named_children()) {
    model.sequential->push_back(std::string(child.name), ScriptedLayer(child.value));
  }
  model.defaultBatch = 8;
  applyTask(task, model);
  return model;
}

}  // namespace pipeprof
