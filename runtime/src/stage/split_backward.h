// A stage's backward split in two: I, the gradients of the stage's inputs (what the previous
// stage waits for), then later W, the gradients of its weights (what nothing waits for).
//
// The graph of a stage, from its outputs (the roots) down, splits by one question per node:
// does it reach an input (a stage input's gradient sink, a popped skip's leaf)? Those that do
// are I's; those that do not lead only to weights and are W's. A node of I with an edge into
// W's part (AddmmBackward: its input's gradient for I, its weight's for W) is a frontier node:
//
//   roots ──► ... ──► X (frontier) ──► ... ──► input sinks        I: computes X's I-side outputs
//                      └───────────► TBackward ──► weight         W: reruns X for its W-side ones
//
// I runs autograd's engine from the roots to the inputs only (every frontier node computes
// only its outputs that lead to inputs, as the engine asks of it), capturing the gradients
// that enter each frontier node and returning the inputs' gradients. It then cuts each
// frontier node's edges into I's part and frees the saved tensors and edges of every other node
// of I: what stays alive until W is what the weights' gradients need (a saved tensor's grad_fn
// may keep one of I's nodes, but no longer what it led to: a popped skip's leaf). W runs the engine from the
// frontier nodes with the captured gradients: each frontier node now computes only its
// W-side outputs, and the weights' gradients accumulate into .grad() as a full backward's do.
// torch.distributed.pipelining splits the same way (its stage_backward_input / _weight).
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// The weight half of one stage's backward for one micro-batch, between I and W.
class WeightBackward {
 public:
  WeightBackward() = default;

  /// Runs I: the gradients of `inputs` (edges of the stage's inputs, an invalid edge where no
  /// gradient is wanted: its result is undefined) from `roots` (tensors with a graph) seeded
  /// with `grads`, each in storage of its own (not a slice of a larger gradient). Keeps in
  /// *this what W needs.
  std::vector<torch::Tensor> runInputs(const std::vector<torch::Tensor>& roots, const std::vector<torch::Tensor>& grads,
                                       const torch::autograd::edge_list& inputs);

  /// Runs W: accumulates the weights' gradients, then frees the graph. Nothing when I left no
  /// weight to reach.
  void runWeights();

  /// The bytes of the gradients kept for W (each storage once): those I captured, and those of
  /// roots that reach no input. The profiler's input_kept_bytes.
  std::int64_t keptGradientBytes() const;

 private:
  torch::autograd::edge_list edges_;  ///< into frontier nodes and the roots that reach no input
  std::vector<torch::Tensor> grads_;  ///< the gradient entering each
};

}  // namespace pipeprof
