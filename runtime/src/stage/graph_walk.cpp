// Which nodes of an autograd graph lead to some of its ends (graph_walk.h).
#include "stage/graph_walk.h"

#include <torch/csrc/autograd/variable.h>

namespace pipeprof {

using torch::autograd::Edge;
using torch::autograd::edge_list;
using torch::autograd::Node;

Reachability reachingNodes(const edge_list& roots, const std::unordered_set<Node*>& targets) {
  Reachability walk;
  auto& reaches = walk.reaches;
  struct Frame {
    Node* node;
    std::size_t next;
  };
  std::vector<Frame> stack;
  for (const Edge& root : roots) {
    Node* start = root.function.get();
    if (start == nullptr || reaches.count(start) != 0) continue;
    reaches[start] = targets.count(start) != 0;
    walk.order.push_back(start);
    stack.push_back({start, 0});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next == frame.node->num_outputs()) {
        Node* done = frame.node;
        stack.pop_back();
        if (!stack.empty() && reaches[done]) reaches[stack.back().node] = true;
        continue;
      }
      Node* child = frame.node->next_edge(frame.next++).function.get();
      if (child == nullptr) continue;
      auto known = reaches.find(child);
      if (known != reaches.end()) {
        if (known->second) reaches[frame.node] = true;
        continue;
      }
      reaches[child] = targets.count(child) != 0;
      walk.order.push_back(child);
      stack.push_back({child, 0});
    }
  }
  return walk;
}

bool reachesTarget(const std::unordered_map<Node*, bool>& reaches, Node* node) {
  auto found = reaches.find(node);
  return found != reaches.end() && found->second;
}

edge_list gradientEdgesOf(const std::vector<torch::Tensor>& tensors) {
  edge_list edges;
  edges.reserve(tensors.size());
  for (const torch::Tensor& tensor : tensors) edges.push_back(torch::autograd::impl::gradient_edge(tensor));
  return edges;
}

std::unordered_set<Node*> nodesOf(const edge_list& ends) {
  std::unordered_set<Node*> nodes;
  for (const Edge& end : ends) {
    if (end.is_valid()) nodes.insert(end.function.get());
  }
  return nodes;
}

}  // namespace pipeprof
