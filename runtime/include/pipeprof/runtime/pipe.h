// The Pipe: a Sequential split into stages on pipeline devices, trained by micro-batches on a schedule.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/layer_hooks.h>
#include <pipeprof/runtime/loss_fn.h>
#include <pipeprof/runtime/pipe_error.h>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

class HostTracer;

/// The Pipe's shape (balance, schedule, v, chunks, checkpoint mode) and where it runs.
struct PipeOptions : PipelineShape {
  /// One per pipeline device (stage j runs on devices[deviceOfStage(j)]; entries past the p-th are
  /// ignored); empty: every CUDA device, or p CPU devices when there is none.
  std::vector<torch::Device> devices;
  bool deferredBatchNorm = false;
  /// bf16, fp16: every worker runs its forwards (and the loss) under autocast to that type for
  /// the step, its cast cache cleared at the step's end; backwards run with autocast paused.
  /// fp16 needs CUDA devices.
  Precision precision = Precision::Fp32;
  /// The CPUs each pipeline device's worker runs on (its OpenMP team, made later, inherits
  /// them), as launch::cpuShare splits a host: one list per device, or empty (the default) to
  /// leave every worker where the scheduler puts it; an empty list leaves that one worker so
  /// (docs/runtime.md, "Threads"). Throws std::invalid_argument for lists of another count than
  /// the devices, or a CPU outside 0..CPU_SETSIZE-1.
  std::vector<std::vector<int>> workerCpus;
};

class PipeImpl;

/// Splits `module` by `balance` into n stages on p = n / v pipeline devices (stage j on device
/// j mod p) and runs it as a pipeline, one worker thread per device running its stages' ops in
/// the schedule's device order. step() trains under any schedule. With GPipe, forward()
/// returns a tensor connected to autograd and loss.backward() runs the pipeline's backward on
/// the workers; either way every parameter's gradient is accumulated exactly as for the
/// unpartitioned module.
///
/// Throws std::invalid_argument (bad balance, chunks, devices, duplicate children/parameters,
/// unmatched skip stash/pop pairs, a (schedule, stagesPerDevice) that does not fit the
/// balance) with a message naming the bad values.
class Pipe {
 public:
  /// The shape's balance is `balance` (options.balance is replaced by it).
  Pipe(torch::nn::Sequential module, std::vector<std::int64_t> balance, PipeOptions options = {});
  /// The shape's balance is options.balance.
  Pipe(torch::nn::Sequential module, PipeOptions options);
  ~Pipe();
  Pipe(Pipe&&) noexcept;
  Pipe& operator=(Pipe&&) noexcept;

  /// Runs the forwards. Under 1f1b and interleaved only in eval mode or without gradients:
  /// in training with grad enabled it throws std::invalid_argument (use step()). Throws
  /// std::invalid_argument when the micro-batches that exist after scattering (torch::chunk)
  /// do not fit the schedule (interleaved: m a multiple of p), naming m, p and v.
  torch::Tensor forward(const torch::Tensor& input);
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& inputs);

  /// One training step under the Pipe's schedule: splits input and target into the same
  /// micro-batches, computes each micro-batch's loss on the last stage as soon as its forward
  /// ends, and runs the backwards in schedule order. Accumulates every parameter's gradient
  /// exactly as lossFn(module(input), target).backward() would for a mean-reduced loss
  /// (micro-batch i's loss is weighted by its share of the samples). Returns the mini-batch
  /// loss (detached, on the last stage's device). The input's gradient is not computed; the
  /// target may be on any device (its pieces are moved to the last stage's). Throws PipeError
  /// (naming op, stage and micro-batch) when an op or lossFn fails, the Pipe staying usable;
  /// std::invalid_argument for bad inputs (input not on devices()[0], target rows differing
  /// from the input's, m not fitting the schedule). With `lossScale` the backward starts from
  /// lossScale x each loss, so every gradient is lossScale times larger (fp16's loss scaling,
  /// grad_scaler.h); the loss returned is not scaled.
  torch::Tensor step(const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn,
                     double lossScale = 1.0);

  const std::vector<std::int64_t>& balance() const;
  /// The p pipeline devices (stage j runs on devices()[options().deviceOfStage(j)]).
  const std::vector<torch::Device>& devices() const;
  const PipeOptions& options() const;

  /// The wrapped module's parameters (on their stages' devices), in the module's order.
  std::vector<torch::Tensor> parameters() const;
  /// Per pipeline device (p entries), the parameters of its stages, in the module's order.
  std::vector<std::vector<torch::Tensor>> deviceParameters() const;
  /// Runs task(d) for every pipeline device d on d's worker (on the calling thread when there
  /// is one device), with what it allocates counted against d (peakBytes(); on CUDA the task
  /// runs on the compute stream of d's first stage, in order with the thread's current
  /// stream), the devices in parallel; returns when all are done and rethrows the first
  /// exception a task threw.
  void onEachDevice(const std::function<void(std::int64_t d)>& task);
  /// The wrapped module (its children live on their stages' devices).
  torch::nn::Sequential module() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool isTraining() const;

  /// Per pipeline device (p entries; per stage when v = 1), peak bytes of the last step
  /// (forward + backward, or step()), as defined in docs/formats.md: the parameters of the
  /// device's stages, gradients, activations kept for backward, skip tensors and transients,
  /// attributed to the device whose worker allocated them (docs/runtime.md). The tracker's
  /// tags are per process: read it before another Pipe runs.
  std::vector<Bytes> peakBytes() const;
  /// Per pipeline device, the CUDA caching allocator's peak allocated bytes on it since the
  /// last forward or step: the whole device, so pipeline devices sharing it read the same
  /// figure. nullopt for CPU devices and builds without CUDA.
  std::vector<std::optional<Bytes>> devicePeakBytes() const;
  /// Starts a new measurement window for peakBytes() (done automatically at each forward).
  void resetPeakBytes();

  /// Emits a span for every op of every (i, j) when the tracer is enabled; null to stop.
  void setTracer(HostTracer* tracer);

 private:
  std::unique_ptr<PipeImpl> impl_;
};

}  // namespace pipeprof
