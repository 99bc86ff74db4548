// A TorchScript model whose forward does more than run its children: its layers are the pieces
// of its forward split at the submodule calls (graph_split.h), each run by TorchScript.
#include "models/graph_model.h"

#include <pipeprof/runtime/layer_hooks.h>
#include <pipeprof/runtime/skip.h>

#include "models/graph_batch_norm.h"
#include "models/graph_split.h"
#include "stage/shared_parameters.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof {

std::string flatName(std::string path) {
  std::replace(path.begin(), path.end(), '.', '_');
  return path;
}

namespace {

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> parts;
  for (std::size_t begin = 0, dot = 0; dot != std::string::npos; begin = dot + 1) {
    dot = path.find('.', begin);
    parts.push_back(path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
  }
  return parts;
}

torch::Tensor tensorAt(const torch::jit::Module& root, const std::string& path) {
  c10::IValue value = root._ivalue();
  for (const std::string& part : splitPath(path)) value = value.toObjectRef().getAttr(part);
  return value.toTensor();
}

/// One piece of the forward as a layer: runs the piece's graph on a shallow copy of the root
/// module (its own, so a replica it holds is not another layer's) and registers the parameters
/// and buffers the piece uses (the same tensors), so moving, training and gradients work as
/// for a native layer. Pops what the piece takes after its input, stashes what it gives after
/// its output.
class GraphLayerImpl : public Skippable, public ReplicaHolder, public InnerBatchNorms {
 public:
  GraphLayerImpl(const torch::jit::Module& root, GraphPiece piece)
      : Skippable(piece.stashes, piece.pops),
        self_(root._ivalue()->copy()),
        function_(std::make_unique<torch::jit::GraphFunction>(
            c10::QualifiedName("pipeprof.graph." + flatName(piece.path)), piece.graph, nullptr)),
        piece_(std::move(piece)) {
    for (const std::string& path : piece_.parameters) {
      const torch::Tensor tensor = tensorAt(root, path);
      register_parameter(flatName(path), tensor, tensor.requires_grad());
    }
    for (const std::string& path : piece_.buffers) register_buffer(flatName(path), tensorAt(root, path));
  }

  /// Runs without TorchScript's optimizing passes, as a scripted Sequential's layers do
  /// (torchscript.cpp says why). With its batch norms deferred, in training: the rewritten graph,
  /// each batch norm's input handed to its statistics.
  torch::Tensor forward(const torch::Tensor& input) {
    std::vector<c10::IValue> stack{c10::IValue(self_), input};
    for (const std::string& name : piece_.pops) stack.emplace_back(pop(name));
    const bool deferring = deferred_ && is_training();
    {
      torch::jit::GraphOptimizerEnabledGuard plain(false);
      (deferring ? deferred_ : function_)->run(stack);
    }
    if (!deferring && piece_.stashes.empty()) return stack.back().toTensor();
    const auto outputs = stack.back().toTuple()->elements();
    for (std::size_t k = 0; k < piece_.stashes.size(); ++k) stash(piece_.stashes[k], outputs.at(k + 1).toTensor());
    if (deferring) {
      const std::size_t first = 1 + piece_.stashes.size();
      for (std::size_t k = 0; k < batchNorms_.size(); ++k) batchNorms_[k]->accumulate(outputs.at(first + k).toTensor());
    }
    return outputs.at(0).toTensor();
  }

  std::vector<std::string> innerBatchNorms() const override { return piece_.batchNorms; }

  torch::nn::AnyModule withDeferredBatchNorms(
      std::vector<std::shared_ptr<DeferredBatchNormImpl>>& converted) const override {
    const torch::jit::Module root(self_);
    auto copy = std::make_shared<GraphLayerImpl>(root, piece_);
    for (const std::string& name : stashNames()) copy->isolate(namespaceOf(name), {name});
    for (const std::string& name : popNames()) copy->isolate(namespaceOf(name), {name});
    DeferredBatchNormGraph deferred = deferBatchNorms(piece_, root);
    copy->deferred_ = std::make_unique<torch::jit::GraphFunction>(
        c10::QualifiedName("pipeprof.graph.deferred." + flatName(piece_.path)), deferred.graph, nullptr);
    copy->batchNorms_ = deferred.batchNorms;
    converted.insert(converted.end(), deferred.batchNorms.begin(), deferred.batchNorms.end());
    copy->train(is_training());
    return torch::nn::AnyModule(copy);
  }

  void train(bool on) override {
    torch::nn::Module::train(on);
    torch::jit::Module(self_).train(on);
  }

  /// Every slot of this layer's root copy holding `shared`: the objects on its path are copied
  /// first, so the other layers' slots keep the original.
  void holdReplica(const torch::Tensor& shared, const torch::Tensor& replica) override {
    for (const std::string& path : piece_.parameters) {
      if (!tensorAt(torch::jit::Module(self_), path).is_same(shared)) continue;
      const std::vector<std::string> parts = splitPath(path);
      c10::intrusive_ptr<c10::ivalue::Object> owner = self_;
      for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
        auto copy = owner->getAttr(parts[k]).toObject()->copy();
        owner->setAttr(parts[k], copy);
        owner = copy;
      }
      owner->setAttr(parts.back(), replica);
      parameters_[flatName(path)] = replica;
    }
  }

 private:
  c10::intrusive_ptr<c10::ivalue::Object> self_;
  std::unique_ptr<torch::jit::GraphFunction> function_;
  GraphPiece piece_;
  /// With deferred batch norm: the graph training runs, and the statistics its extra outputs feed.
  std::unique_ptr<torch::jit::GraphFunction> deferred_;
  std::vector<std::shared_ptr<DeferredBatchNormImpl>> batchNorms_;
};
TORCH_MODULE(GraphLayer);

}  // namespace

void addGraphLayers(const torch::jit::Module& scripted, const std::string& path, Model& model) {
  const GraphSplit split = splitAtSubmoduleCalls(scripted, path);
  const Namespace names;
  for (const GraphPiece& piece : split.pieces) {
    GraphLayer layer(scripted, piece);
    layer->isolate(names);
    model.layerPaths.push_back(piece.path);
    model.sequential->push_back(flatName(piece.path), layer);
  }
  model.unsplittable = split.joined;
  verifySkips(model.sequential);
  model.skips = skipRoutes(model.sequential);
}

}  // namespace pipeprof
