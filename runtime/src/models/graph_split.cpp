// Splitting a TorchScript forward at its submodule calls: flattening, the pieces, what crosses
// each cut and each piece's own graph (graph_split.h draws it).
#include "models/graph_split.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace pipeprof {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

namespace {

bool isTensor(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

}  // namespace

std::string joined(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& part : path) out += (out.empty() ? "" : ".") + part;
  return out;
}

std::optional<std::vector<std::string>> attributePath(const Value* v, const Value* self) {
  std::vector<std::string> reversed;
  for (; v != self; v = v->node()->input(0)) {
    if (v->node()->kind() != c10::prim::GetAttr) return std::nullopt;
    reversed.push_back(v->node()->s(c10::attr::name));
  }
  return std::vector<std::string>(reversed.rbegin(), reversed.rend());
}

torch::jit::Module moduleAt(const torch::jit::Module& root, const std::vector<std::string>& path) {
  torch::jit::Module module = root;
  for (const std::string& name : path) module = module.attr(name).toModule();
  return module;
}

namespace {

/// Constants and reads of the root's attributes: each piece that uses one makes its own.
bool isFree(const Node* n, const Value* self) {
  return n->kind() == c10::prim::Constant ||
         (n->kind() == c10::prim::GetAttr && attributePath(n->output(), self).has_value());
}

/// Where TorchScript says a node came from ("model.py:24:12"), or "".
std::string sourceLine(const Node* n) {
  auto range = n->sourceRange().findSourceRangeThatGenerated();
  if (!range) range = n->sourceRange();
  const auto place = range->file_line_col();
  if (!place || std::get<0>(*place).empty()) return "";
  return std::get<0>(*place) + ":" + std::to_string(std::get<1>(*place)) + ":" + std::to_string(std::get<2>(*place));
}

/// Whether a called module is a Sequential to look into: its forward runs its children in turn,
/// and it is one (a Sequential, or a subclass naming itself so) or has more than one child. A
/// module that only wraps one child (`DoubleConv` around its Sequential) stays one call.
bool isSequential(const torch::jit::Module& module) {
  if (!forwardChainsItsChildren(module)) return false;
  const auto name = module.type()->name();
  const bool namedSequential = name && name->name().find("Sequential") != std::string::npos;
  return namedSequential || module.named_children().size() > 1;
}

/// Inlines, until none is left at the top level, calls of the root's own methods and of
/// submodules whose forward runs their children in turn (Sequentials).
void inlineCalls(Graph& graph, const torch::jit::Module& root) {
  const Value* self = graph.inputs()[0];
  for (bool inlined = true; inlined;) {
    inlined = false;
    for (Node* node : graph.nodes()) {
      if (node->kind() != c10::prim::CallMethod) continue;
      const auto path = attributePath(node->input(0), self);
      if (!path) continue;
      const torch::jit::Module owner = moduleAt(root, *path);
      const std::string method = node->s(c10::attr::name);
      if (!path->empty() && !(method == "forward" && isSequential(owner))) continue;
      // Its own graph, not the optimized one (which has every call inlined, submodules' too).
      torch::jit::GraphFunction& callee = torch::jit::toGraphFunction(owner.get_method(method).function());
      torch::jit::inlineCallTo(node, &callee, callee.graph().get());
      inlined = true;
      break;
    }
  }
}

/// Replaces forward's inputs after the batch by their defaults; refuses one without.
void bindDefaults(Graph& graph, const torch::jit::Module& root, const std::string& file) {
  const c10::FunctionSchema& schema = root.get_method("forward").function().getSchema();
  std::ostringstream signature;
  signature << schema;
  if (graph.inputs().size() < 2 || !isTensor(graph.inputs()[1])) {
    throw std::invalid_argument("TorchScript model '" + file +
                                "': forward must take the batch as a tensor first; it takes " + signature.str());
  }
  torch::jit::WithInsertPoint front(graph.block()->nodes().front());
  for (std::size_t i = graph.inputs().size(); i-- > 2;) {
    const c10::Argument& argument = schema.arguments().at(i);
    if (!argument.default_value()) {
      throw std::invalid_argument("TorchScript model '" + file + "': forward's argument '" + argument.name() +
                                  "' has no default; pipeprof gives forward one input, the batch, and the others "
                                  "their defaults (" +
                                  signature.str() + ")");
    }
    graph.inputs()[i]->replaceAllUsesWith(graph.insertConstant(*argument.default_value()));
    graph.eraseInput(i);
  }
  if (graph.outputs().size() != 1 || !isTensor(graph.outputs()[0])) {
    throw std::invalid_argument("TorchScript model '" + file + "': forward returns " +
                                graph.outputs()[0]->type()->repr_str() +
                                "; pipeprof trains a forward that returns one tensor, the loss's input");
  }
}

/// Every value a node uses from outside itself: its inputs and what its blocks use from the
/// top level.
void usesOf(Node* n, const Block* top, std::vector<Value*>& out) {
  for (Value* v : n->inputs()) {
    if (v->node()->owningBlock() == top) out.push_back(v);
  }
  for (Block* block : n->blocks()) {
    for (Node* inner : block->nodes()) usesOf(inner, top, out);
    usesOf(block->return_node(), top, out);
  }
}

/// Thrown inside the analysis when a value cannot cross the cuts from piece `from` to `to`.
struct UncrossableValue {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string reason;
};

/// The flattened forward, its pieces' nodes and what each piece needs from the ones before.
class Analysis {
 public:
  Analysis(std::shared_ptr<Graph> graph, const torch::jit::Module& root)
      : graph_(std::move(graph)), root_(root), self_(graph_->inputs()[0]), input_(graph_->inputs()[1]) {
    for (Node* n : graph_->nodes()) {
      if (isFree(n, self_)) continue;
      if (n->kind() == c10::prim::CallMethod) {
        const auto path = attributePath(n->input(0), self_);
        if (path && !path->empty()) callPaths_[nodes_.size()] = joined(*path);
      }
      position_[n] = nodes_.size();
      nodes_.push_back(n);
    }
  }

  /// The node positions where a submodule call begins a piece, the first one's at 0.
  std::vector<std::size_t> callStarts() const {
    std::vector<std::size_t> starts;
    for (const auto& [at, path] : callPaths_) starts.push_back(starts.empty() ? 0 : at);
    return starts;
  }

  /// The module path of the call at node position `at`.
  const std::string& callPathAt(std::size_t at) const { return callPaths_.at(at); }

  /// The split with pieces beginning at `starts`; throws UncrossableValue.
  GraphSplit split(const std::vector<std::size_t>& starts) {
    starts_ = starts;
    const std::size_t count = starts_.size();
    tensorNeeds_.assign(count, {});
    recomputed_.assign(count, {});
    for (std::size_t p = 0; p < count; ++p) {
      std::vector<Value*> uses;
      for (std::size_t i = starts_[p]; i < end(p); ++i) usesOf(nodes_[i], graph_->block(), uses);
      if (p + 1 == count) uses.push_back(graph_->outputs()[0]);
      for (Value* v : uses) need(p, v);
    }
    chooseMains();
    route();
    GraphSplit result;
    std::map<std::string, int> seen;
    for (std::size_t p = 0; p < count; ++p) {
      GraphPiece piece;
      const auto call = std::find_if(callPaths_.begin(), callPaths_.end(),
                                     [&](const auto& entry) { return entry.first >= starts_[p]; });
      piece.path = call->second;
      if (++seen[piece.path] > 1) piece.path += "#" + std::to_string(seen[piece.path]);
      result.pieces.push_back(std::move(piece));
    }
    for (std::size_t p = 0; p < count; ++p) build(p, result.pieces[p], result.pieces);
    result.crossing.resize(count);
    for (std::size_t k = 0; k + 1 < count; ++k) {
      result.crossing[k].push_back({mains_[k]->debugName(), true});
      for (const Hop& hop : hops_) {
        if (hop.from <= k && k < hop.to) result.crossing[k].push_back({hop.value->debugName(), false});
      }
    }
    return result;
  }

 private:
  struct Hop {
    Value* value = nullptr;
    std::size_t from = 0;
    std::size_t to = 0;
  };

  /// The skip name of a hop: the value's and the piece it goes to ("mask.1>h.1").
  static std::string skipName(const Hop& hop, const std::vector<GraphPiece>& pieces) {
    return hop.value->debugName() + ">" + pieces[hop.to].path;
  }

  std::size_t end(std::size_t p) const { return p + 1 < starts_.size() ? starts_[p + 1] : nodes_.size(); }

  /// The piece that makes v (the batch: the first).
  std::size_t pieceOf(const Value* v) const {
    if (v == input_) return 0;
    const std::size_t at = position_.at(v->node());
    return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin()) - 1;
  }

  /// Where v is made, in the forward's order: its maker's position and its place among the
  /// maker's outputs (the batch: before every node). Orders values the same in every process.
  std::pair<std::ptrdiff_t, std::size_t> madeAt(const Value* v) const {
    if (v == input_) return {-1, 0};
    return {static_cast<std::ptrdiff_t>(position_.at(v->node())), v->offset()};
  }

  /// Piece p uses v: a tensor made before it travels to it; a non-tensor is made again in it.
  void need(std::size_t p, Value* v) {
    if (v == self_ || isFree(v->node(), self_)) return;
    const std::size_t maker = pieceOf(v);
    if (maker == p) return;
    if (isTensor(v)) {
      tensorNeeds_[p].insert(v);
      return;
    }
    Node* n = v->node();
    const bool computable = n->kind() != c10::prim::CallMethod && n->kind() != c10::prim::CallFunction &&
                            n->blocks().empty() && !n->hasSideEffects();
    if (!computable) {
      const std::string line = sourceLine(n);
      throw UncrossableValue{maker, p,
                             "the value '" + v->debugName() + "' (" + v->type()->repr_str() + ", made by " +
                                 n->kind().toQualString() + (line.empty() ? "" : " at " + line) +
                                 ") is not a tensor and cannot be computed again from tensors"};
    }
    if (!recomputed_[p].insert(n).second) return;
    std::vector<Value*> uses;
    usesOf(n, graph_->block(), uses);
    for (Value* use : uses) need(p, use);
  }

  /// The tensor each cut passes as the next piece's input: the latest-made one it uses, else
  /// the latest-made one still needed after it.
  void chooseMains() {
    const std::size_t count = starts_.size();
    mains_.assign(count - 1, nullptr);
    for (std::size_t k = 0; k + 1 < count; ++k) {
      Value* best = nullptr;
      for (Value* v : tensorNeeds_[k + 1]) {
        if (pieceOf(v) <= k && (!best || madeAt(v) > madeAt(best))) best = v;
      }
      for (std::size_t later = k + 2; !best && later < count; ++later) {
        for (Value* v : tensorNeeds_[later]) {
          if (pieceOf(v) <= k && (!best || madeAt(v) > madeAt(best))) best = v;
        }
      }
      if (!best) throw std::logic_error("nothing crosses a cut of a graph whose output depends on its input");
      mains_[k] = best;
    }
  }

  /// Each needed tensor's hops: by main where the cut passes it, else stashed where it is and
  /// popped by the next piece that needs it.
  void route() {
    hops_.clear();
    std::set<Value*> neededOnce;
    for (const auto& needs : tensorNeeds_) neededOnce.insert(needs.begin(), needs.end());
    for (Value* main : mains_) neededOnce.insert(main);
    std::vector<Value*> needed(neededOnce.begin(), neededOnce.end());
    std::sort(needed.begin(), needed.end(), [&](const Value* a, const Value* b) { return madeAt(a) < madeAt(b); });
    for (Value* v : needed) {
      std::size_t holder = pieceOf(v);
      for (std::size_t p = holder + 1; p < starts_.size(); ++p) {
        const bool outputHere = p + 1 < starts_.size() && mains_[p] == v;
        if (mains_[p - 1] == v) {
          holder = p;
        } else if (tensorNeeds_[p].count(v) > 0 || outputHere) {
          hops_.push_back({v, holder, p});
          holder = p;
        }
      }
    }
  }

  /// Piece p's graph (self, input, pops...) -> output or (output, stashes...), and what of
  /// the root it uses.
  void build(std::size_t p, GraphPiece& piece, const std::vector<GraphPiece>& pieces) {
    auto g = std::make_shared<Graph>();
    std::unordered_map<const Value*, Value*> env;
    Value* self = g->addInput("self")->setType(self_->type());
    env[self_] = self;
    Value* in = p == 0 ? input_ : mains_[p - 1];
    env[in] = g->addInput()->setType(c10::TensorType::get());
    for (const Hop& hop : hops_) {
      if (hop.to != p) continue;
      env[hop.value] = g->addInput()->setType(c10::TensorType::get());
      piece.pops.push_back(skipName(hop, pieces));
    }
    std::function<Value*(Value*)> map = [&](Value* v) -> Value* {
      const auto known = env.find(v);
      if (known != env.end()) return known->second;
      Node* n = v->node();
      if (!isFree(n, self_)) throw std::logic_error("graph split: " + v->debugName() + " reached no piece");
      Node* copy = g->insertNode(g->createClone(n, map));
      for (std::size_t k = 0; k < n->outputs().size(); ++k) env[n->output(k)] = copy->output(k);
      return env.at(v);
    };
    std::vector<Node*> order(recomputed_[p].begin(), recomputed_[p].end());
    std::sort(order.begin(), order.end(), [&](Node* a, Node* b) { return position_.at(a) < position_.at(b); });
    for (std::size_t i = starts_[p]; i < end(p); ++i) order.push_back(nodes_[i]);
    for (Node* n : order) {
      Node* copy = g->insertNode(g->createClone(n, map));
      for (std::size_t k = 0; k < n->outputs().size(); ++k) env[n->output(k)] = copy->output(k);
    }
    std::vector<Value*> outputs{map(p + 1 < starts_.size() ? mains_[p] : graph_->outputs()[0])};
    for (const Hop& hop : hops_) {
      if (hop.from != p) continue;
      outputs.push_back(map(hop.value));
      piece.stashes.push_back(skipName(hop, pieces));
    }
    g->registerOutput(outputs.size() == 1 ? outputs[0] : g->insertNode(g->createTuple(outputs))->output());
    piece.graph = g;
    collectState(*g->block(), self, piece);
  }

  /// The parameters and buffers of the modules a piece calls and of the attributes it reads.
  void collectState(const Block& block, const Value* self, GraphPiece& piece) const {
    const auto add = [](std::vector<std::string>& paths, const std::string& path) {
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    };
    for (const Node* n : block.nodes()) {
      for (const Block* inner : n->blocks()) collectState(*inner, self, piece);
      if (n->kind() == c10::prim::CallMethod) {
        const auto path = attributePath(n->input(0), self);
        if (!path || path->empty()) continue;
        const std::string prefix = joined(*path) + ".";
        const torch::jit::Module called = moduleAt(root_, *path);
        for (const auto& parameter : called.named_parameters(/*recurse=*/true))
          add(piece.parameters, prefix + parameter.name);
        for (const auto& buffer : called.named_buffers(/*recurse=*/true)) add(piece.buffers, prefix + buffer.name);
        for (const auto& module : called.named_modules()) {
          const std::string type = module.value.type()->name() ? module.value.type()->name()->name() : "";
          if (type.rfind("BatchNorm", 0) == 0)
            add(piece.batchNorms, module.name.empty() ? joined(*path) : prefix + module.name);
        }
      } else if (n->kind() == c10::prim::GetAttr && isTensor(n->output())) {
        const auto path = attributePath(n->output(), self);
        if (!path) continue;
        const torch::jit::Module owner = moduleAt(root_, std::vector<std::string>(path->begin(), path->end() - 1));
        const auto slot = owner.type()->findAttributeSlot(path->back());
        if (slot && owner.type()->is_parameter(*slot)) add(piece.parameters, joined(*path));
        if (slot && owner.type()->is_buffer(*slot)) add(piece.buffers, joined(*path));
      }
    }
  }

  std::shared_ptr<Graph> graph_;
  const torch::jit::Module& root_;
  Value* self_;
  Value* input_;
  std::vector<Node*> nodes_;  ///< the top-level nodes that are not free, in order
  std::unordered_map<const Node*, std::size_t> position_;
  std::map<std::size_t, std::string> callPaths_;  ///< node position -> module path of the call
  std::vector<std::size_t> starts_;
  std::vector<std::set<Value*>> tensorNeeds_;  ///< by piece: tensors made before it that it uses
  std::vector<std::set<Node*>> recomputed_;    ///< by piece: non-tensor makers it runs again
  std::vector<Value*> mains_;                  ///< by cut
  std::vector<Hop> hops_;
};

}  // namespace

bool forwardChainsItsChildren(const torch::jit::Module& module) {
  const auto method = module.find_method("forward");
  if (!method) return false;
  const std::shared_ptr<Graph> graph = method->graph();
  if (graph->inputs().size() != 2 || graph->outputs().size() != 1) return false;
  const Value* self = graph->inputs()[0];
  const Value* x = graph->inputs()[1];
  std::map<const Value*, std::string> children;  // what each GetAttr of self reads
  std::vector<std::string> called;
  for (Node* node : graph->nodes()) {
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
  for (const auto& child : module.named_children()) expected.push_back(child.name);
  return graph->outputs()[0] == x && called == expected;
}

GraphSplit splitAtSubmoduleCalls(const torch::jit::Module& root, const std::string& path) {
  auto graph = root.get_method("forward").graph()->copy();
  bindDefaults(*graph, root, path);
  inlineCalls(*graph, root);
  Analysis analysis(graph, root);
  std::vector<std::size_t> starts = analysis.callStarts();
  if (starts.empty()) {
    throw std::invalid_argument("TorchScript model '" + path +
                                "': its forward calls no submodule, so it has no place to split");
  }
  // A value that cannot cross from piece `from` to `to` joins them: no stage may begin between.
  std::vector<std::string> joined;
  for (;;) {
    try {
      GraphSplit split = analysis.split(starts);
      split.joined = std::move(joined);
      return split;
    } catch (const UncrossableValue& uncrossable) {
      for (std::size_t p = uncrossable.from + 1; p <= uncrossable.to; ++p) {
        joined.push_back("no stage may begin at '" + analysis.callPathAt(starts[p]) + "': " + uncrossable.reason);
      }
      starts.erase(starts.begin() + static_cast<std::ptrdiff_t>(uncrossable.from) + 1,
                   starts.begin() + static_cast<std::ptrdiff_t>(uncrossable.to) + 1);
    }
  }
}

}  // namespace pipeprof
