// One training step of the pipeline: per-cell state and the ops each device's worker runs.
//
// Stages and devices: stage (partition) j runs on pipeline device d = j mod p; device d's
// worker runs the compute ops of all its stages (v = n / p of them) in
// Schedule::deviceOrder(d), each under its own stage's compute stream. Cells, waits and
// copies are per stage, so two virtual stages of one device hand tensors over exactly as two
// devices do (without a copy).
//
// Data flow of micro-batch i between partitions (training, autograd on):
//
//   partition j-1                 partition j                        partition j+1
//   outputs(i,j-1) ──detach──► inputs(i,j) (leaves) ─layers─► outputs(i,j) ──► ...
//        ▲                          │ .grad()                     ▲
//        └──── outputGrads(i,j-1) ◄─┘ after backward(i,j) ◄─── outputGrads(i,j)
//
// Every partition owns its own autograd graph: its inputs (and skip tensors it pops from
// other partitions) are detached leaves, so backward(i,j) is a plain
// torch::autograd::backward over outputs(i,j) (and the skip tensors it stashed for later
// partitions) on worker j's thread, which accumulates the parameters' gradients and leaves
// the gradients of the inputs and popped skips in the leaves' .grad(). Every tensor handed to
// another partition goes through PipeStreams (streams.h), which copies it and synchronises the
// CUDA streams; between CPU partitions it passes as is.
#pragma once

#include "microbatch.h"
#include "partition.h"
#include "streams.h"

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/skip.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace pipeprof {

class HostTracer;

/// Which ops of its order a worker runs: the forwards (forward()), the recomputes and
/// backwards (the autograd backward after forward()), or all of them with the losses (step()).
enum class StepPhase { Forward, Backward, Training };

/// What a step is run with; fixed for the step.
struct StepConfig {
  const std::vector<Partition>* partitions = nullptr;
  const PipeStreams* streams = nullptr;  ///< one entry per partition
  const Schedule* schedule = nullptr;
  std::vector<PartitionSkipRoute> routes;
  bool gradEnabled = true;       ///< autograd on: keep graphs, run backward
  std::uint64_t baseSeed = 0;    ///< RNG seed of the step (stochastic partitions)
  HostTracer* tracer = nullptr;
  std::vector<std::string> deviceNames;  ///< trace device of each partition (its pipeline device's)
  int intraOpThreads = 1;                ///< the caller's at::get_num_threads(), adopted by workers
  std::vector<Bytes> deviceParameterBytes;  ///< per pipeline device: its stages' parameters
  /// step(): the loss of a micro-batch; null for forward() (the caller computes the loss).
  const LossFn* lossFn = nullptr;
  /// step(): the target rows of each micro-batch, on the last stage's device.
  std::vector<torch::Tensor> targets;
  std::int64_t batchRows = 0;  ///< step(): rows of the mini-batch (loss(i) weighs rows_i / batchRows)
};

/// The state of one step; shared by the Pipe's forward, the autograd nodes and the workers.
class Step {
 public:
  Step(StepConfig config, std::vector<Tensors> microBatches);

  std::int64_t chunks() const { return m_; }
  std::int64_t partitions() const { return n_; }
  const StepConfig& config() const { return config_; }

  /// Device d's worker: the ops of `phase` in Schedule::deviceOrder(d). Never throws: the
  /// first failure is kept for rethrowIfFailed() and stops every worker early.
  void run(std::int64_t d, StepPhase phase);

  /// Outputs of the last partition per micro-batch, for use on the calling thread's current
  /// streams (after the forward phase finished).
  std::vector<Tensors> lastOutputs() const;
  /// Hands the gradients of the last partition's outputs, produced on the calling thread's
  /// current stream, to the backward ops.
  void setOutputGrads(std::vector<Tensors> grads);
  /// Gradients of the step's inputs per micro-batch, for use on the calling thread's current
  /// streams (after the backward phase finished); undefined tensors where an input got none.
  std::vector<Tensors> inputGrads() const;
  /// step(): the sum of the micro-batches' weighted losses (detached), for use on the calling
  /// thread's current streams (after the training phase finished).
  torch::Tensor lossSum() const;

  /// Throws PipeError (with the original exception nested) when an op failed.
  void rethrowIfFailed() const;
  /// Frees every tensor the step still holds.
  void release();

 private:
  struct Cell {
    Tensors inputs;    ///< leaves when gradEnabled (kept for backward and recompute)
    Tensors outputs;   ///< last layer's outputs (with graph unless checkpointed)
    /// recompute(i, j)'s outputs, with graph. Apart from `outputs`: a device may recompute
    /// (i, j) before stage j+1 took the forward's outputs (1F1B, interleaved).
    Tensors recomputed;
    ReadyEvent outputsWritten;  ///< on the compute stream, after the forward wrote outputs
    bool outputReady = false;
    Handover outputGrads;
    bool outputGradsReady = false;
    std::map<SkipKey, torch::Tensor> stashedOut;    ///< stashed for later partitions (graph)
    std::map<SkipKey, torch::Tensor> poppedLeaves;  ///< popped from earlier partitions
    std::map<SkipKey, Handover> stashGrads;         ///< gradients of stashedOut
    std::int64_t pendingStashGrads = 0;
    Tensors inputGrads;
    torch::Tensor target;     ///< step(), last stage: the micro-batch's target rows
    torch::Tensor loss;       ///< step(), last stage: the weighted loss with its graph, for backward
    torch::Tensor lossValue;  ///< step(), last stage: the weighted loss, detached
  };
  class CellTracker;
  friend class CellTracker;

  enum class Pass { Forward, Recompute };

  void forwardOp(const Op& op);
  void recomputeOp(const Op& op);
  void backwardOp(const Op& op);
  void lossOp(const Op& op);
  /// lossFn(output, target) * rows_i / batchRows, checked to be a scalar.
  torch::Tensor weightedLoss(const Tensors& outputs, const torch::Tensor& target) const;
  /// Sends the gradients of (i, j)'s inputs and popped skips to the partitions they came from.
  void sendGradients(std::int64_t i, std::int64_t j, Tensors inputGrads,
                     std::vector<std::pair<const PartitionSkipRoute*, torch::Tensor>> popGrads);
  Tensors runPartition(std::int64_t i, std::int64_t j, Tensors inputs, Pass pass);
  bool checkpointed(std::int64_t i) const;
  Cell& cell(std::int64_t i, std::int64_t j);
  void fail(const Op& op, std::exception_ptr error);
  /// Partition j's worker waits under lock until ready() or the step failed; false when it
  /// failed. Whoever changes what j waits for calls wake(j) (one condition per partition, so
  /// a change wakes only the worker it concerns).
  template <typename Ready>
  bool waitFor(std::unique_lock<std::mutex>& lock, std::int64_t j, Ready ready);
  void wake(std::int64_t j);
  /// A memory counter sample of stage j's device (when tracing).
  void recordMemory(std::int64_t j) const;

  StepConfig config_;
  std::int64_t m_;
  std::int64_t n_;
  std::vector<Cell> cells_;  ///< [i * n + j]
  std::map<std::pair<SkipKey, std::int64_t>, Handover> skipsInFlight_;  ///< (key, i)

  mutable std::mutex mutex_;
  std::vector<std::condition_variable> changed_;  ///< per partition
  bool failed_ = false;
  std::exception_ptr error_;
  std::string errorWhere_;
  std::int64_t errorI_ = -1;
  std::int64_t errorJ_ = -1;
};

}  // namespace pipeprof
