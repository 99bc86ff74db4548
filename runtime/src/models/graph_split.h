// A TorchScript model split at its submodule calls, as torch.distributed.pipelining's pipeline()
// splits a traced model: the layers of a model whose forward does more than run its children.
//
// The top-level forward is flattened first: calls of the root's own methods (torchvision's
// `_forward_impl`) and of Sequentials whose children are called in turn (a Sequential, or a
// module of several children whose forward only chains them; not one that wraps a single
// child) are inlined, so a
// ResNet's `layer3` gives `layer3.0`, `layer3.1`, ... (a loop over a ModuleList is unrolled by
// TorchScript already: `h.0`, `h.1`, ...). A layer then begins at each submodule call; the code
// between two calls (adding positions, a concatenation, a flatten) belongs to the layer of the
// call before it, and the code before the first call to the first layer.
//
// What crosses a cut travels the way the pipeline's layers pass tensors:
//   - one tensor per cut is the layer's output, the next layer's input (the "main" value: the
//     latest-made one the next layer uses);
//   - every other tensor a later layer uses is a skip, stashed where it is (made or last
//     received) and popped by the next layer that uses it, which stashes it again for the one
//     after: a mask every block uses travels once per hop, never twice over one;
//   - parameters and buffers are read again by each layer that uses them (a tied head holds
//     its embedding's weight: the shared-parameter path);
//   - a non-tensor value (a size, a device, a list of ints) is computed again in the layer
//     that uses it, from the tensors it came from; one that a submodule call or control flow
//     made cannot be, and is refused naming the value, its source line and the cut.
//
//   forward(idx):   t = idx.size(1); x = wte(idx) + wpe(arange(t)); mask = ...; h.0(x, mask) ...
//   layer "wte":    idx -> wte(idx)                            stashes idx (for arange's size)
//   layer "wpe":    tok, pops idx -> tok + wpe(arange(t))      stashes mask
//   layer "h.0":    x, pops mask -> h.0(x, mask)              stashes mask again for h.1 ...
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// One layer of a split graph: a graph of (self, input, popped...) -> output, or -> a tuple of
/// (output, stashed...).
struct GraphPiece {
  std::string path;  ///< the module path of the call it begins with ("h.0"); unique in the split
  std::shared_ptr<torch::jit::Graph> graph;
  std::vector<std::string> pops;        ///< skip names, in the graph's input order after the input
  std::vector<std::string> stashes;     ///< skip names, in the output tuple's order after the output
  std::vector<std::string> parameters;  ///< paths from the root ("h.0.attn.weight") of what it uses
  std::vector<std::string> buffers;
  /// The module paths of the batch norms the piece's calls run ("layer1.0.bn1"), in order.
  std::vector<std::string> batchNorms;
};

/// A tensor that crosses the cut after a piece.
struct CrossingValue {
  std::string name;   ///< TorchScript's name of the value ("mask.1")
  bool main = false;  ///< the next layer's input, not a skip
};

struct GraphSplit {
  std::vector<GraphPiece> pieces;
  /// By cut: crossing[k] is what travels from piece k to piece k+1 (the last has nothing).
  std::vector<std::vector<CrossingValue>> crossing;
  /// The submodule calls no layer begins at, each with the value that keeps a cut from there.
  std::vector<std::string> joined;
};

/// "a.b.c" from {"a", "b", "c"}.
std::string joined(const std::vector<std::string>& path);
/// The attribute path from `self` of a value made by GetAttr chains ({} for self itself);
/// nullopt for any other value.
std::optional<std::vector<std::string>> attributePath(const torch::jit::Value* v, const torch::jit::Value* self);
/// The submodule of `root` at `path`.
torch::jit::Module moduleAt(const torch::jit::Module& root, const std::vector<std::string>& path);

/// Whether the module's forward is a Sequential's: each child's forward once, in order, each on
/// the previous one's output, the last one's returned.
bool forwardChainsItsChildren(const torch::jit::Module& module);

/// Splits `root`'s forward at its submodule calls (see above); a call after which a value that
/// cannot cross is still used begins no layer (GraphSplit::joined says why). Throws
/// std::invalid_argument, naming `path` (the file), for a forward that calls no submodule,
/// takes inputs without defaults beyond the batch or returns something other than a tensor.
GraphSplit splitAtSubmoduleCalls(const torch::jit::Module& root, const std::string& path);

}  // namespace pipeprof
