// Deferred batch norm: running statistics updated once per mini-batch, not once per micro-batch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pipeprof {

/// A BatchNorm whose running statistics are updated once per mini-batch. In training each
/// micro-batch is normalised with its own statistics (as a BatchNorm would), while the
/// per-channel sum, sum of squares and count are accumulated (not during recompute); commit()
/// then updates running_mean / running_var (unbiased, count/(count-1)) and num_batches_tracked
/// exactly as one BatchNorm forward over the whole mini-batch would. In eval it uses the
/// running statistics. The Pipe converts the BatchNorm1d/2d/3d layers of its Sequential into
/// this when PipeOptions::deferredBatchNorm is set (sharing their parameters and buffers) and
/// commits after each training forward.
class DeferredBatchNormImpl : public torch::nn::Module {
 public:
  /// Shares the parameters and buffers of `batchNorm` (a BatchNorm1d/2d/3d).
  explicit DeferredBatchNormImpl(const torch::nn::Module& batchNorm);
  /// Keeps the statistics of a batch norm that normalises elsewhere (inside a TorchScript
  /// graph, which hands accumulate() its inputs), sharing its tensors.
  DeferredBatchNormImpl(const torch::nn::BatchNormOptions& options, torch::Tensor weight, torch::Tensor bias,
                        torch::Tensor runningMean, torch::Tensor runningVar, torch::Tensor numBatchesTracked);

  torch::Tensor forward(const torch::Tensor& input);
  /// What forward does beside normalising, in training: adds a micro-batch's per-channel sum,
  /// sum of squares and count to what commit() folds in -- not during recompute.
  void accumulate(const torch::Tensor& input);

  /// Updates the running statistics from what was accumulated since the last commit and
  /// clears the accumulators. Does nothing when nothing was accumulated.
  void commit();
  /// Drops what was accumulated (e.g. after a failed step).
  void resetStatistics();

  torch::nn::BatchNormOptions options;
  torch::Tensor weight;
  torch::Tensor bias;
  torch::Tensor running_mean;  // NOLINT(readability-identifier-naming): LibTorch's names
  torch::Tensor running_var;
  torch::Tensor num_batches_tracked;

 private:
  torch::Tensor sum_;
  torch::Tensor sumOfSquares_;
  std::int64_t count_ = 0;
};
TORCH_MODULE(DeferredBatchNorm);

/// Whether the module is a BatchNorm1d, BatchNorm2d or BatchNorm3d.
bool isBatchNorm(const torch::nn::Module& module);

/// A copy of the Sequential whose BatchNorm layers are DeferredBatchNorm layers sharing their
/// tensors; the converted layers are appended to `converted` (to commit them after a step).
/// Throws std::invalid_argument when a BatchNorm is nested inside a layer (it cannot be replaced).
torch::nn::Sequential withDeferredBatchNorm(const torch::nn::Sequential& module,
                                            std::vector<std::shared_ptr<DeferredBatchNormImpl>>& converted);

}  // namespace pipeprof
