// Copies of their own for the slices of a gradient that a backward hands towards a stage's
// inputs, made as the node that slices it returns.
//
// A concatenation's backward slices its output's gradient: one part for each input. Left as
// slices, the parts keep the whole alive: a part bound for a stage input or a popped skip until
// the backward ends (the engine holds what it captures, a sink what it received), and a part
// bound for the layer before while that layer runs (which then copies its non-contiguous part
// itself). A post hook on each node with an edge into an input gives every part that leads to
// an input storage of its own as the node returns it, so that the whole goes at once and each
// layer gets the contiguous gradient the profiler measured it with (docs/simulator.md, "A
// skip's gradient"). Parts that lead nowhere the backward goes (a skip that wants no gradient)
// are left alone: the engine drops them.
#pragma once

#include "stage/graph_walk.h"

#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace pipeprof {

/// The hooks, for as long as the object lives: on every node of `walk` with an edge into one of
/// `targets` (the nodes of the inputs' gradient edges).
class SliceHooks {
 public:
  SliceHooks(const Reachability& walk, const std::unordered_set<torch::autograd::Node*>& targets);
  ~SliceHooks();
  SliceHooks(const SliceHooks&) = delete;
  SliceHooks& operator=(const SliceHooks&) = delete;

 private:
  std::vector<std::pair<torch::autograd::Node*, std::uintptr_t>> installed_;
};

}  // namespace pipeprof
