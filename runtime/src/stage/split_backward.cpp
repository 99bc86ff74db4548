// A stage's backward split into I (the inputs' gradients) and W (the weights').
#include "stage/split_backward.h"

#include "stage/graph_walk.h"
#include "stage/slice_hooks.h"
#include "stage/stage_input.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace pipeprof {
namespace {

using torch::autograd::Edge;
using torch::autograd::edge_list;
using torch::autograd::Node;

/// The frontier: nodes of I (reaching a target, not one themselves) with an edge into W's part,
/// in the walk's order.
std::vector<Node*> frontierOf(const Reachability& walk, const std::unordered_set<Node*>& targets) {
  std::vector<Node*> frontier;
  for (Node* node : walk.order) {
    if (!walk.reaches.at(node) || targets.count(node) != 0) continue;
    for (const Edge& next : node->next_edges()) {
      if (next.is_valid() && !reachesTarget(walk.reaches, next.function.get())) {
        frontier.push_back(node);
        break;
      }
    }
  }
  return frontier;
}

/// After I: frees the saved tensors of every node of I's part but the frontier (they never run
/// again) and cuts their edges, then cuts the frontier's edges into I's part, so that W runs only
/// W's part. The release comes first: the cut may free those nodes. (The cut goes through the
/// edge list itself: set_next_edge refuses a node that has a parent, to keep topological numbers
/// ordered, and dropping a child keeps them so.) `frontier` holds the frontier nodes alive meanwhile.
///
/// Why I's nodes lose their edges too: a W node keeps the tensors it saved, and a saved tensor
/// that is not the node's own output keeps its grad_fn, so I's nodes behind it stay alive until W
/// ends (unet: the convolution after a concatenation saves the concatenation, whose node leads to
/// the popped skip's AccumulateGrad, which holds the skip, stage j - 1's tensor). Without their
/// edges those nodes hold nothing, and the inputs' leaves go when I does.
void detachInputsPart(const Reachability& walk, const std::unordered_set<Node*>& targets,
                      const std::vector<std::shared_ptr<Node>>& frontier) {
  std::unordered_set<Node*> kept;
  for (const auto& node : frontier) kept.insert(node.get());
  std::vector<std::shared_ptr<Node>> inputsPart;  // alive while their edges are cut
  for (Node* node : walk.order) {
    if (walk.reaches.at(node) && kept.count(node) == 0 && targets.count(node) == 0) {
      node->release_variables();
      inputsPart.push_back(node->shared_from_this());
    }
  }
  for (const std::shared_ptr<Node>& node : inputsPart) {
    for (Edge& next : node->next_edges()) next = Edge();
  }
  for (const std::shared_ptr<Node>& node : frontier) {
    for (Edge& next : node->next_edges()) {
      if (reachesTarget(walk.reaches, next.function.get())) next = Edge();
    }
  }
}

}  // namespace

std::vector<torch::Tensor> WeightBackward::runInputs(const std::vector<torch::Tensor>& roots,
                                                     const std::vector<torch::Tensor>& grads, const edge_list& inputs) {
  const edge_list rootEdges = gradientEdgesOf(roots);
  const std::unordered_set<Node*> targets = nodesOf(inputs);
  const Reachability walk = reachingNodes(rootEdges, targets);
  const std::unordered_map<Node*, bool>& reaches = walk.reaches;

  // Captured: every input of each frontier node.
  const std::vector<Node*> frontier = frontierOf(walk, targets);
  edge_list outputs;
  std::vector<std::size_t> inputIndex;  // index into outputs of each input, or npos
  for (const Edge& input : inputs) {
    inputIndex.push_back(input.is_valid() ? outputs.size() : std::string::npos);
    if (input.is_valid()) outputs.push_back(input);
  }
  const std::size_t firstCapture = outputs.size();
  for (Node* node : frontier) {
    for (std::uint32_t slot = 0; slot < node->num_inputs(); ++slot) {
      outputs.emplace_back(node->shared_from_this(), slot);
    }
  }

  // I: only what leads to the inputs runs; the engine hands back what reached them and the frontier.
  edge_list inputRoots;
  std::vector<torch::Tensor> inputGrads;
  edges_.clear();
  grads_.clear();
  for (std::size_t k = 0; k < rootEdges.size(); ++k) {
    if (reachesTarget(reaches, rootEdges[k].function.get())) {
      inputRoots.push_back(rootEdges[k]);
      inputGrads.push_back(grads[k]);
    } else if (rootEdges[k].is_valid()) {  // reaches weights only: all of it is W's
      edges_.push_back(rootEdges[k]);
      grads_.push_back(grads[k]);
    }
  }
  std::vector<torch::Tensor> captured;
  if (!inputRoots.empty() && !outputs.empty()) {
    const SliceHooks slices(walk, targets);
    captured = torch::autograd::Engine::get_default_engine().execute(inputRoots, inputGrads, /*keep_graph=*/true,
                                                                     /*create_graph=*/false,
                                                                     /*accumulate_grad=*/false, outputs);
  }
  std::vector<torch::Tensor> result;  // (a copy here only for a root that is an input: no hook saw it)
  for (std::size_t index : inputIndex) {
    result.push_back(index == std::string::npos || captured.empty() ? torch::Tensor()
                                                                    : gradientOfItsOwn(captured[index]));
  }

  // What W runs from: each frontier node's captured inputs.
  std::vector<std::shared_ptr<Node>> held;  // the frontier, alive while I's part is let go
  std::size_t capture = firstCapture;
  for (Node* node : frontier) {
    held.push_back(node->shared_from_this());
    for (std::uint32_t slot = 0; slot < node->num_inputs(); ++slot, ++capture) {
      if (captured.empty() || !captured[capture].defined()) continue;
      edges_.emplace_back(held.back(), slot);
      grads_.push_back(captured[capture]);
    }
  }
  detachInputsPart(walk, targets, held);
  return result;
}

std::int64_t WeightBackward::keptGradientBytes() const {
  std::unordered_set<const void*> storages;
  std::int64_t bytes = 0;
  for (const torch::Tensor& grad : grads_) {
    if (!grad.defined() || !grad.has_storage()) continue;
    if (storages.insert(grad.storage().data()).second) bytes += static_cast<std::int64_t>(grad.storage().nbytes());
  }
  return bytes;
}

void WeightBackward::runWeights() {
  if (!edges_.empty()) {
    torch::autograd::Engine::get_default_engine().execute(edges_, grads_, /*keep_graph=*/false, /*create_graph=*/false,
                                                          /*accumulate_grad=*/true);
  }
  edges_.clear();
  grads_.clear();
}

}  // namespace pipeprof
