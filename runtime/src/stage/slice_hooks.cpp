// Copies of their own for the slices of a gradient bound for a stage's inputs (slice_hooks.h).
#include "stage/slice_hooks.h"

#include "stage/stage_input.h"

#include <torch/csrc/autograd/function_hook.h>

#include <memory>

namespace pipeprof {
namespace {

using torch::autograd::Node;
using torch::autograd::variable_list;

/// Gives the outputs it names storage of their own where they are slices of a larger one.
class SlicesOfTheirOwn : public torch::autograd::FunctionPostHook {
 public:
  explicit SlicesOfTheirOwn(std::vector<std::size_t> outputs) : outputs_(std::move(outputs)) {}

  variable_list operator()(const variable_list& outputs, const variable_list& /*inputs*/) override {
    variable_list owned = outputs;
    for (std::size_t index : outputs_) {
      if (index < owned.size()) owned[index] = gradientOfItsOwn(owned[index]);
    }
    return owned;
  }

 private:
  std::vector<std::size_t> outputs_;
};

}  // namespace

SliceHooks::SliceHooks(const Reachability& walk, const std::unordered_set<Node*>& targets) {
  for (Node* node : walk.order) {
    if (targets.count(node) != 0) continue;
    bool intoAnInput = false;
    std::vector<std::size_t> towardInputs;
    for (std::size_t index = 0; index < node->num_outputs(); ++index) {
      Node* next = node->next_edge(index).function.get();
      if (next == nullptr) continue;
      const bool target = targets.count(next) != 0;
      intoAnInput = intoAnInput || target;
      if (target || reachesTarget(walk.reaches, next)) towardInputs.push_back(index);
    }
    if (!intoAnInput) continue;
    installed_.emplace_back(node, node->add_post_hook(std::make_unique<SlicesOfTheirOwn>(std::move(towardInputs))));
  }
}

SliceHooks::~SliceHooks() {
  for (auto& [node, key] : installed_) node->del_post_hook(key);
}

}  // namespace pipeprof
