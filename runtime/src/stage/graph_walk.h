// Which nodes of an autograd graph lead to some of its ends: the walk a split backward cuts the
// graph by, and a backward's slice hooks are placed by.
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pipeprof {

/// The nodes reachable from some roots: whether each reaches one of the targets, and the nodes
/// in the order the walk met them (so that what is built from them does not depend on hashing).
struct Reachability {
  std::unordered_map<torch::autograd::Node*, bool> reaches;
  std::vector<torch::autograd::Node*> order;
};

/// Walks the graph from `roots` (iteratively: a deep stage's graph would overflow a recursive walk).
Reachability reachingNodes(const torch::autograd::edge_list& roots,
                           const std::unordered_set<torch::autograd::Node*>& targets);

/// Whether the node, reached by the walk, reaches a target; a node the walk never met does not.
bool reachesTarget(const std::unordered_map<torch::autograd::Node*, bool>& reaches, torch::autograd::Node* node);

/// The gradient edges of `tensors` (an invalid edge for a tensor without a graph).
torch::autograd::edge_list gradientEdgesOf(const std::vector<torch::Tensor>& tensors);

/// The nodes of `ends`' valid edges.
std::unordered_set<torch::autograd::Node*> nodesOf(const torch::autograd::edge_list& ends);

}  // namespace pipeprof
