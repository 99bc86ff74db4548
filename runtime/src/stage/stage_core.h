// One stage's work for one micro-batch, written once for both executors: forward, loss,
// recompute, backward (whole, or split into I and W), skip routing and RNG replay.
//
// The threaded Pipe (pipeline.h) and a rank of the multi-process pipeline (stage_step.h) run the
// same StageCore; they differ only in their channels, how tensors travel between stages: a
// hand-over between the threads of one process (thread_channel.h) or messages between ranks
// (rank_channel.h); a rank's set-up pass runs forwards through a shape channel (shape_channel.h). Data flow of
// micro-batch i through stage j (training, autograd on):
//
//   receiveActivations(i,j) ──► inputs (sunk) ─layers─► outputs ───► sendActivations(i,j)
//   receiveSkip(route,i) ─────► popped leaves      │ stash ─────────► sendSkip(route,i)
//                                                  ▼
//   sendInputGrads(i,j) ◄── inputs' sinks ◄─── backward(i,j) ◄── receiveOutputGrads(i,j)
//   sendSkipGrad(route,i) ◄─ popped leaves' .grad()         ◄── receiveSkipGrad(route,i)
//
// Every stage owns its autograd graph: its inputs are detached and end in gradient sinks
// (stage_input.h: no leaves, so a first layer may work in place), the skips it pops from other
// stages are detached leaves, so backward(i, j) is one torch::autograd::backward over its
// outputs (or its loss, on the last stage) and the skips it stashed for later stages (split
// into I then W under a zero-bubble schedule: split_backward.h). A
// checkpointed micro-batch's forward keeps no graph; recompute(i, j) replays it (the same
// random numbers: a stochastic stage is seeded per (micro-batch, stage)) right before
// backward(i, j), from the inputs as they arrived: a stage whose layers write their input in
// place runs such a forward on a copy.
//
// The cells of stage j are touched only by the thread that runs stage j's ops (its device's
// worker, or its rank), so the core takes no lock; a channel synchronises what crosses stages.
#pragma once

#include "stage/autocast.h"
#include "stage/microbatch.h"
#include "stage/shared_parameters.h"
#include "stage/split_backward.h"
#include "stage/stage.h"
#include "stage/stage_input.h"

#include <pipeprof/core/precision.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/loss_fn.h>
#include <pipeprof/runtime/skip.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeprof {

class HostTracer;

/// How tensors travel between stages, the one thing the executors do differently: the forward
/// half (activations to the next stage, skips to the stage that pops them) and the backward
/// half (their gradients back). Every call is made by the thread running the op of the stage
/// named (j, or the route's end that calls it). Receives block until the tensors are there
/// and throw when the step is abandoned. An undefined tensor stands for "no gradient".
class ForwardChannel {
 public:
  virtual ~ForwardChannel() = default;
  /// Stage j's inputs for micro-batch i (j > 0): what stage j - 1 sent.
  virtual Tensors receiveActivations(std::int64_t i, std::int64_t j) = 0;
  /// Hands stage j's outputs for micro-batch i to stage j + 1 (j + 1 < n).
  virtual void sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) = 0;
  /// A skip tensor stashed in route.stashJ, for route.popJ (the route crosses stages).
  virtual void sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) = 0;
  virtual torch::Tensor receiveSkip(const StageSkipRoute& route, std::int64_t i) = 0;
};

class BackwardChannel {
 public:
  virtual ~BackwardChannel() = default;
  /// The gradients of stage j's outputs: from stage j + 1, or for the last stage of a step
  /// without a loss from the caller (forward() then backward()).
  virtual Tensors receiveOutputGrads(std::int64_t i, std::int64_t j) = 0;
  /// The gradients of stage j's inputs: to stage j - 1, or for stage 0 to the caller.
  virtual void sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) = 0;
  /// The gradient of a skip popped in route.popJ, to route.stashJ.
  virtual void sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) = 0;
  virtual torch::Tensor receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) = 0;
};

/// What a step's stages run with; fixed for the step.
struct StageCoreConfig {
  const Schedule* schedule = nullptr;
  /// By stage j: the stages this process runs (all of them for the threaded Pipe, a rank's own
  /// for the multi-process pipeline); null for another rank's.
  std::vector<const Stage*> stages;
  const std::vector<StageSkipRoute>* routes = nullptr;
  bool gradEnabled = true;     ///< autograd on: keep graphs, run backward
  std::uint64_t baseSeed = 0;  ///< RNG seed of the step (stochastic stages)
  /// The loss of a micro-batch; null when the step has no loss ops (forward(): the caller's).
  const LossFn* lossFn = nullptr;
  std::int64_t batchRows = 0;  ///< rows of the mini-batch (loss(i) weighs rows_i / batchRows)
  HostTracer* tracer = nullptr;
  std::vector<std::string> traceDevices;    ///< by stage j: the trace device of its pipeline device
  std::vector<Bytes> deviceParameterBytes;  ///< by pipeline device: its stages' parameters
  /// The forward's arithmetic. bf16/fp16: the thread running a device's ops holds
  /// autocastFor(d) for the step; backward pauses it.
  Precision precision = Precision::Fp32;
  /// The last stage's backward starts from lossScale x the loss (fp16's loss scaling, grad_scaler.h).
  double lossScale = 1.0;
  /// The parameters layers of several pipeline devices hold (shared_parameters.h); null or
  /// empty when there are none.
  const std::vector<SharedParameter>* shared = nullptr;
};

/// The ops of the stages of one step. Construct it per step; run(op) for each compute op, on the
/// thread of the op's stage, in the schedule's device order.
class StageCore {
 public:
  /// microBatches: the input's micro-batches (read by stage 0); targets: the target's (read by
  /// the last stage; empty without a loss). backward: null for a pass of forwards only.
  StageCore(StageCoreConfig config, ForwardChannel& forward, BackwardChannel* backward,
            std::vector<Tensors> microBatches, std::vector<torch::Tensor> targets);

  const StageCoreConfig& config() const { return config_; }
  /// m: the micro-batches the step runs (torch.chunk may give fewer than the chunks asked for).
  std::int64_t m() const { return m_; }

  /// Runs one compute op (forward, recompute, backward, its I or W, or loss) and, when tracing, samples its
  /// device's memory afterwards. Throws what the layers, the loss or the channel throw.
  void run(const Op& op);

  /// The autocast the thread that runs pipeline device d's ops holds for the whole step (one
  /// per thread: its cast cache is cleared when it closes): the precision on the device of d's
  /// stages. Throws std::logic_error when none of this process's stages is on d.
  AutocastScope autocastFor(std::int64_t d) const;

  /// The last stage's outputs of micro-batch i, as its forward left them (forward()).
  const Tensors& lastOutputs(std::int64_t i) const { return cell(i, n_ - 1).outputs; }
  /// The detached weighted losses of the micro-batches whose loss ran (undefined elsewhere).
  Tensors lossValues() const;
  /// After the step's backward ops, on one thread: sums the gradients of each shared
  /// parameter's copies into every copy this process holds (sumSharedGradients), `peers` being
  /// the other processes' copies' (a rank's exchange). Nothing when the step kept no graphs.
  void sumSharedGradients(const PeerGradients& peers = {}) const;
  /// Frees every tensor the cells hold.
  void release();

 private:
  struct Cell {
    std::vector<StageInput> inputs;                 ///< when gradEnabled (kept for backward and recompute)
    Tensors outputs;                                ///< with graph unless checkpointed; the last stage's until its loss
    Tensors recomputed;                             ///< recompute(i, j)'s outputs, with graph
    std::map<SkipKey, torch::Tensor> stashedOut;    ///< stashed for later stages (graph)
    std::map<SkipKey, torch::Tensor> poppedLeaves;  ///< popped from earlier stages
    torch::Tensor loss;                             ///< last stage: the weighted loss with its graph, for backward
    torch::Tensor lossValue;                        ///< last stage: the weighted loss, detached
    WeightBackward weights;                         ///< from I to W: what the weights' gradients need
  };
  enum class Pass { Forward, Recompute };
  class SkipRouter;

  void forward(std::int64_t i, std::int64_t j);
  void recompute(std::int64_t i, std::int64_t j);
  void loss(std::int64_t i);
  /// B (`kind` Backward) or I (BackwardInput): the gradients of stage j's inputs for micro-batch
  /// i, sent on; B accumulates the weights' gradients too, I keeps what W needs for them.
  void backward(std::int64_t i, std::int64_t j, OpKind kind);
  /// W: the weights' gradients of micro-batch i on stage j, after its I.
  void backwardWeight(std::int64_t i, std::int64_t j);
  /// Runs stage j's layers on micro-batch i with its skips routed and, for a stochastic stage,
  /// the generators seeded per (i, j) so a recompute replays the forward's random numbers.
  Tensors runStage(std::int64_t i, std::int64_t j, Tensors inputs, Pass pass);
  /// lossFn(output, target) * rows_i / batchRows, checked to be a scalar.
  torch::Tensor weightedLoss(const Tensors& outputs, const torch::Tensor& target) const;
  bool checkpointed(std::int64_t i) const { return config_.schedule->checkpointed(i); }
  Cell& cell(std::int64_t i, std::int64_t j) { return cells_[static_cast<std::size_t>(i * n_ + j)]; }
  const Cell& cell(std::int64_t i, std::int64_t j) const { return cells_[static_cast<std::size_t>(i * n_ + j)]; }
  void recordMemory(std::int64_t j) const;

  StageCoreConfig config_;
  ForwardChannel& forward_;
  BackwardChannel* backward_;
  std::int64_t m_;
  std::int64_t n_;
  std::vector<Tensors> microBatches_;
  std::vector<torch::Tensor> targets_;
  std::vector<Cell> cells_;  ///< [i * n + j]; fixed size, so threads of distinct stages never race
};

/// "forward(2,1) on stage 1, micro-batch 2": where an op failed, as both executors say it.
std::string opLocation(const Schedule& schedule, const Op& op);

/// A copy op's identity, for its label and trace span: micro-batch i from stage fromJ to toJ.
Op copyOp(OpKind kind, std::int64_t i, std::int64_t fromJ, std::int64_t toJ, bool gradient, std::int64_t skip);

}  // namespace pipeprof
