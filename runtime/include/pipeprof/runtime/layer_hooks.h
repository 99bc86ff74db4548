// What a user's layer may implement, or ask, to run inside a pipeline.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

class DeferredBatchNormImpl;

/// Marks a user layer as drawing random numbers in forward (like Dropout, which is detected
/// on its own): inherit it next to torch::nn::Module. The pipeline then seeds the default
/// generator per (micro-batch, stage), so recompute replays the same numbers.
class Stochastic {
 public:
  virtual ~Stochastic() = default;
};

/// A layer that can hold a replica of a parameter in place of the shared tensor: a parameter
/// that layers of two pipeline devices hold (a tied embedding and head) is replicated on the
/// later device, whose layers must take the replica (shared_parameters.h in the runtime).
class ReplicaHolder {
 public:
  virtual ~ReplicaHolder() = default;
  /// Makes every slot of the layer (and its descendants) that holds `shared` hold `replica`.
  virtual void holdReplica(const torch::Tensor& shared, const torch::Tensor& replica) = 0;
};

/// A layer that runs batch norms which are not torch::nn modules of its own (a TorchScript
/// graph's): deferred batch norm cannot replace them, so it asks the layer for a copy that
/// defers them.
class InnerBatchNorms {
 public:
  virtual ~InnerBatchNorms() = default;
  /// Their module paths ("layer1.0.bn1"); empty when it runs none.
  virtual std::vector<std::string> innerBatchNorms() const = 0;
  /// A copy of the layer, sharing its parameters and buffers, whose batch norms normalise each
  /// micro-batch in training with its own statistics and leave the running ones to the
  /// DeferredBatchNorm statistics it appends to `converted`, one per batch norm (the pipeline
  /// commits them once per mini-batch). Throws std::invalid_argument, naming the batch norm,
  /// for one it cannot reach.
  virtual torch::nn::AnyModule withDeferredBatchNorms(
      std::vector<std::shared_ptr<DeferredBatchNormImpl>>& converted) const = 0;
};

/// True while the calling thread replays a checkpointed forward (recompute(i, j)): a layer
/// whose forward has a side effect (batch norm's running statistics) skips it then.
bool isRecomputing();

}  // namespace pipeprof
