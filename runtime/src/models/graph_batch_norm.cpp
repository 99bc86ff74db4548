// Deferred batch norm inside a TorchScript graph (graph_batch_norm.h).
#include "models/graph_batch_norm.h"

#include <torch/csrc/jit/passes/inliner.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using torch::jit::Node;
using torch::jit::Value;

/// The module a GetAttr of `attribute` reads from, where `v` is such a read.
const Value* ownerIfRead(const Value* v, const char* attribute) {
  const Node* n = v->node();
  if (n->kind() != c10::prim::GetAttr || n->s(c10::attr::name) != attribute) return nullptr;
  return n->input(0);
}

/// Every node of the block and the blocks inside it, in order.
void collectNodes(torch::jit::Block* block, std::vector<Node*>& into) {
  for (Node* n : block->nodes()) {
    into.push_back(n);
    for (torch::jit::Block* inner : n->blocks()) collectNodes(inner, into);
  }
}

torch::Tensor tensorOrUndefined(const c10::IValue& value) {
  return value.isTensor() ? value.toTensor() : torch::Tensor();
}

/// The statistics of a TorchScript batch norm that tracks running statistics, sharing its tensors.
std::shared_ptr<DeferredBatchNormImpl> statisticsOf(const torch::jit::Module& batchNorm) {
  const torch::Tensor runningMean = batchNorm.attr("running_mean").toTensor();
  torch::nn::BatchNormOptions options(runningMean.size(0));
  options.eps(batchNorm.attr("eps").toDouble());
  const c10::IValue momentum = batchNorm.attr("momentum");
  options.momentum(momentum.isNone() ? c10::optional<double>() : c10::optional<double>(momentum.toDouble()));
  options.affine(batchNorm.attr("affine").toBool());
  options.track_running_stats(true);
  return std::make_shared<DeferredBatchNormImpl>(
      options, tensorOrUndefined(batchNorm.attr("weight")), tensorOrUndefined(batchNorm.attr("bias")), runningMean,
      batchNorm.attr("running_var").toTensor(), batchNorm.attr("num_batches_tracked").toTensor());
}

}  // namespace

DeferredBatchNormGraph deferBatchNorms(const GraphPiece& piece, const torch::jit::Module& root) {
  DeferredBatchNormGraph out;
  out.graph = piece.graph->copy();
  torch::jit::Graph& g = *out.graph;
  torch::jit::Inline(g);
  const Value* self = g.inputs().at(0);
  std::vector<Node*> nodes;
  collectNodes(g.block(), nodes);
  Value* none = g.insertConstant(c10::IValue());
  Value* training = g.insertConstant(true);
  none->node()->moveBefore(g.block()->nodes().front());
  training->node()->moveBefore(g.block()->nodes().front());
  std::vector<Value*> inputs;
  for (Node* n : nodes) {
    if (n->kind() == c10::aten::add_ && ownerIfRead(n->input(0), "num_batches_tracked") != nullptr) {
      // Counted once per mini-batch by commit().
      n->output()->replaceAllUsesWith(n->input(0));
      n->destroy();
      continue;
    }
    if (n->kind() != c10::aten::batch_norm) continue;
    const Value* module = ownerIfRead(n->input(3), "running_mean");
    if (module == nullptr) continue;  // it tracks no running statistics: nothing to defer
    const auto path = attributePath(module, self);
    const std::string name = path ? joined(*path) : n->input(3)->debugName();
    if (!path || n->owningBlock() != g.block()) {
      throw std::invalid_argument("deferred batch norm cannot reach the batch norm '" + name + "' in layer '" +
                                  piece.path +
                                  "': it runs inside control flow of the graph; turn deferredBatchNorm off");
    }
    out.batchNorms.push_back(statisticsOf(moduleAt(root, *path)));
    n->replaceInput(3, none);
    n->replaceInput(4, none);
    n->replaceInput(5, training);
    inputs.push_back(n->input(0));
  }
  // (output, stashed...) and then the batch norms' inputs, as one tuple.
  Value* result = g.outputs().at(0);
  std::vector<Value*> elements;
  if (!piece.stashes.empty() && result->node()->kind() == c10::prim::TupleConstruct) {
    elements.assign(result->node()->inputs().begin(), result->node()->inputs().end());
  } else {
    elements.push_back(result);
  }
  elements.insert(elements.end(), inputs.begin(), inputs.end());
  g.eraseOutput(0);
  g.registerOutput(g.insertNode(g.createTuple(elements))->output());
  return out;
}

}  // namespace pipeprof
