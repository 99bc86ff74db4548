// One training step of the pipeline: per-cell state and the forward/backward ops each worker runs.
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

/// A skip route between partitions (stash partition != pop partition, or the same).
struct PartitionSkipRoute {
  SkipKey key;
  std::int64_t scheduleIndex = 0;  ///< index into ScheduleSpec::skips (for op labels)
  std::int64_t stashJ = 0;
  std::int64_t popJ = 0;
};

/// What a step is run with; fixed for the step.
struct StepConfig {
  const std::vector<Partition>* partitions = nullptr;
  const PipeStreams* streams = nullptr;  ///< one entry per partition
  const Schedule* schedule = nullptr;
  std::vector<PartitionSkipRoute> routes;
  bool gradEnabled = true;       ///< autograd on: keep graphs, run backward
  std::uint64_t baseSeed = 0;    ///< RNG seed of the step (stochastic partitions)
  HostTracer* tracer = nullptr;
  std::vector<std::string> deviceNames;  ///< trace device of each partition
  int intraOpThreads = 1;                ///< the caller's at::get_num_threads(), adopted by workers
};

/// The state of one step; shared by the Pipe's forward, the autograd nodes and the workers.
class Step {
 public:
  Step(StepConfig config, std::vector<Tensors> microBatches);

  std::int64_t chunks() const { return m_; }
  std::int64_t partitions() const { return n_; }
  const StepConfig& config() const { return config_; }

  /// Worker j's forward ops (forward(i, j) for every i, in schedule order).
  void runForward(std::int64_t j);
  /// Worker j's backward ops (recompute and backward, in schedule order).
  void runBackward(std::int64_t j);

  /// Outputs of the last partition per micro-batch, for use on the calling thread's current
  /// streams (after the forward phase finished).
  std::vector<Tensors> lastOutputs() const;
  /// Hands the gradients of the last partition's outputs, produced on the calling thread's
  /// current stream, to the backward ops.
  void setOutputGrads(std::vector<Tensors> grads);
  /// Gradients of the step's inputs per micro-batch, for use on the calling thread's current
  /// streams (after the backward phase finished); undefined tensors where an input got none.
  std::vector<Tensors> inputGrads() const;

  /// Throws PipeError (with the original exception nested) when an op failed.
  void rethrowIfFailed() const;
  /// Frees every tensor the step still holds.
  void release();

 private:
  struct Cell {
    Tensors inputs;    ///< leaves when gradEnabled (kept for backward and recompute)
    Tensors outputs;   ///< last layer's outputs (with graph unless checkpointed)
    ReadyEvent outputsWritten;  ///< on the compute stream, after the forward wrote outputs
    bool outputReady = false;
    Handover outputGrads;
    bool outputGradsReady = false;
    std::map<SkipKey, torch::Tensor> stashedOut;    ///< stashed for later partitions (graph)
    std::map<SkipKey, torch::Tensor> poppedLeaves;  ///< popped from earlier partitions
    std::map<SkipKey, Handover> stashGrads;         ///< gradients of stashedOut
    std::int64_t pendingStashGrads = 0;
    Tensors inputGrads;
  };
  class CellTracker;
  friend class CellTracker;

  enum class Pass { Forward, Recompute };

  void forwardOp(const Op& op);
  void recomputeOp(const Op& op);
  void backwardOp(const Op& op);
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
