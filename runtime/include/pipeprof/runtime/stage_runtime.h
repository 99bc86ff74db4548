// One rank of a multi-process pipeline: its device's stages, run in the schedule's order over a Transport.
//
// Rank r owns pipeline device d = r and the stages j placed on it (deviceOfStage(j) == r: j mod p,
// or zbv's stages r and 2p - 1 - r). Every
// tensor that crosses ranks is a message (transport.h): activations forward and their
// gradients backward between stages j and j+1, skip tensors straight from the stashing rank
// to the popping one and their gradients back. Sends are asynchronous and completed at the end
// of the step; receives block in the device's op order, so a schedule runs here exactly as
// the threaded Pipe runs it (a tensor is received when the op that needs it starts):
//
//   rank 0 (stage 0)                       rank 1 (stage 1, the loss)
//   F(i,0) ── send act(i, 0->1) ─────────► F(i,1) receives it, L(i)
//   B(i,0) receives grad(i, 1->0) ◄─────── B(i,1) sends it
//
// Shapes and dtypes of every message are agreed at set-up (the first step with a new set of
// micro-batch sizes): each stage, in stage order, runs its layers once on tensors of the
// received shapes (in eval mode, without gradients, with the random generators restored) and
// sends the shapes of what it hands on. Nothing is discovered by a receive of the wrong size.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/loss_fn.h>
#include <pipeprof/runtime/pipe_error.h>
#include <pipeprof/runtime/transfer_totals.h>
#include <pipeprof/runtime/transport.h>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

class HostTracer;

/// The whole pipeline's shape (the balance has all n = p * v stages of the model) and this
/// rank's device.
struct StageOptions : PipelineShape {
  bool deferredBatchNorm = false;
  torch::Device device = torch::kCPU;  ///< this rank's device
  /// bf16, fp16: the rank's forwards (and the loss) under autocast, as PipeOptions::precision.
  Precision precision = Precision::Fp32;
};

class StageRuntimeImpl;

/// This rank's part of the pipeline. The world size must be p = n / v (one rank per device).
class StageRuntime {
 public:
  /// Keeps the layers of this rank's stages of `module` (the whole model, as every rank builds
  /// it on the CPU from the same seed) and moves them to options.device; the caller drops its
  /// handle so the other stages' parameters are freed. Throws std::invalid_argument (bad
  /// balance, chunks, schedule shape, skips, or a world size other than p) naming the values.
  StageRuntime(torch::nn::Sequential module, StageOptions options, Transport& transport);
  ~StageRuntime();
  StageRuntime(StageRuntime&&) noexcept;
  StageRuntime& operator=(StageRuntime&&) noexcept;

  /// One training step under the schedule, as Pipe::step computes it: every rank passes the
  /// same mini-batch (input and target with the batch's rows along dim 0); the input is read
  /// only by the rank of stage 0, the target only by the rank of the last stage. `baseSeed`
  /// seeds the stochastic layers per (micro-batch, stage) (stepSeed()). Returns the mini-batch
  /// loss on the last stage's rank and an undefined tensor elsewhere. Throws PipeError naming
  /// the op when a layer fails, and TransportError (wrapped in PipeError) when a peer is lost.
  /// `lossScale`: as Pipe::step's.
  torch::Tensor step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn,
                     std::uint64_t baseSeed, double lossScale = 1.0);

  /// The seed step() should get: drawn from the default CPU generator (as the threaded Pipe
  /// draws it) when any layer of the whole model is stochastic, else 0.
  std::uint64_t stepSeed() const;

  /// This rank's stages, in increasing j.
  std::vector<std::int64_t> stages() const;
  /// This rank's parameters, and their names in the whole Sequential ("3.weight").
  std::vector<torch::Tensor> parameters() const;
  std::vector<std::string> parameterNames() const;
  /// Peak bytes of this rank's device during the last step, as Pipe::peakBytes counts a
  /// pipeline device's: its stages' parameters plus the most the memory tracker counted against
  /// the rank at once (its CPU tensors, or its CUDA blocks on the stream its ops ran on).
  Bytes peakBytes() const;
  /// CUDA only: the caching allocator's highest allocated bytes on this rank's device during
  /// the last step (the whole process's: parameters, optimizer state, the transport's
  /// buffers); nullopt on the CPU.
  std::optional<Bytes> devicePeakBytes() const;
  TransferTotals transferTotals() const;
  /// Emits op spans, send and receive spans with flows, and memory counters; null to stop.
  void setTracer(HostTracer* tracer);

  void train(bool on = true);

 private:
  std::unique_ptr<StageRuntimeImpl> impl_;
};

}  // namespace pipeprof
