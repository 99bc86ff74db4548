// The threaded Pipe's step: each device's worker runs its stages' ops on the shared stage core.
//
// Stages and devices: stage j runs on pipeline device d = deviceOfStage(j); device d's
// worker runs the compute ops of all its stages (v = n / p of them) in
// Schedule::deviceOrder(d), each under its own stage's compute stream. The ops themselves are
// the StageCore's (stage_core.h); tensors cross stages through a ThreadChannel
// (thread_channel.h), so two virtual stages of one device hand tensors over exactly as two
// devices do (without a copy). The first op that fails abandons the channel, which stops every
// worker early; the caller gets that error as a PipeError naming op, stage and micro-batch.
#pragma once

#include "stage/microbatch.h"
#include "stage/stage_core.h"
#include "threaded/streams.h"
#include "threaded/thread_channel.h"

#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace pipeprof {

/// Which ops of its order a worker runs: the forwards (forward()), the recomputes and
/// backwards (the autograd backward after forward()), or all of them with the losses (step()).
enum class StepPhase { Forward, Backward, Training };

/// What a step is run with; fixed for the step.
struct ThreadedStepConfig {
  StageCoreConfig core;                  ///< every stage of the Pipe; lossFn set by step() only
  const PipeStreams* streams = nullptr;  ///< one entry per stage
  int intraOpThreads = 1;                ///< the caller's at::get_num_threads(), adopted by workers
};

/// The state of one step; shared by the Pipe's forward, the autograd nodes and the workers.
class ThreadedStep {
 public:
  /// targets: step()'s target rows per micro-batch on the last stage's device (empty otherwise).
  ThreadedStep(ThreadedStepConfig config, std::vector<Tensors> microBatches, std::vector<torch::Tensor> targets = {});

  std::int64_t m() const { return core_.m(); }  ///< the micro-batches the step runs
  int intraOpThreads() const { return config_.intraOpThreads; }

  /// Device d's worker: the ops of `phase` in Schedule::deviceOrder(d). Never throws: the
  /// first failure is kept for rethrowIfFailed() and stops every worker early.
  void run(std::int64_t d, StepPhase phase);
  /// The calling thread's current streams wait for every stage's compute stream (after the
  /// workers finished a phase).
  void join() const { config_.streams->join(); }

  /// Outputs of the last stage per micro-batch, for use on the calling thread's current
  /// streams (after the forward phase finished).
  std::vector<Tensors> lastOutputs() const;
  /// Hands the gradients of the last stage's outputs, produced on the calling thread's
  /// current stream, to the backward ops.
  void setOutputGrads(std::vector<Tensors> grads) { channel_.setOutputGrads(std::move(grads)); }
  /// Gradients of the step's inputs per micro-batch, for use on the calling thread's current
  /// streams (after the backward phase finished); undefined tensors where an input got none.
  std::vector<Tensors> inputGrads() const;
  /// step(): the sum of the micro-batches' weighted losses (detached), for use on the calling
  /// thread's current streams (after the training phase finished).
  torch::Tensor lossSum() const;

  /// Throws the first failed op's PipeError (with the original exception nested).
  void rethrowIfFailed() const;
  /// After a phase with backward ops, on the calling thread's current streams: the shared
  /// parameters' gradients summed (StageCore::sumSharedGradients).
  void sumSharedGradients() const { core_.sumSharedGradients(); }
  /// Frees every tensor the step still holds.
  void release();

 private:
  void fail(std::exception_ptr error);

  ThreadedStepConfig config_;
  ThreadChannel channel_;
  StageCore core_;

  mutable std::mutex errorMutex_;
  std::exception_ptr error_;  ///< the first op's failure (a PipeError), or null
};

}  // namespace pipeprof
