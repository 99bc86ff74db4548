// Deferred batch norm inside a TorchScript graph: a piece's graph whose batch norms normalise
// each micro-batch with its own statistics and hand their inputs out, so the running statistics
// are updated once per mini-batch (deferred_batch_norm.h) rather than once per micro-batch.
#pragma once

#include "models/graph_split.h"

#include <pipeprof/runtime/deferred_batch_norm.h>

#include <torch/script.h>

#include <memory>
#include <vector>

namespace pipeprof {

/// A piece's graph rewritten for deferred batch norm, and the statistics it feeds.
struct DeferredBatchNormGraph {
  /// (self, input, popped...) -> (output, stashed..., the input of each batch norm...): every
  /// call inlined; each batch norm that tracks running statistics normalises with the
  /// micro-batch's own (as in training) and leaves its running statistics and its count alone.
  std::shared_ptr<torch::jit::Graph> graph;
  /// One per batch norm input among the outputs, in order: its statistics, sharing the
  /// TorchScript module's tensors (commit() updates them).
  std::vector<std::shared_ptr<DeferredBatchNormImpl>> batchNorms;
};

/// Rewrites `piece` of `root` (root's object: the module the piece's self is). Throws
/// std::invalid_argument naming the batch norm when it runs inside control flow of the graph.
DeferredBatchNormGraph deferBatchNorms(const GraphPiece& piece, const torch::jit::Module& root);

}  // namespace pipeprof
