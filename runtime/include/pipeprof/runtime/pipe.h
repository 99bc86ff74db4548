// The GPipe Pipe: a Sequential split into partitions on devices, trained by micro-batches.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/units.h>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pipeprof {

class HostTracer;

struct PipeOptions {
  std::vector<torch::Device> devices;  ///< empty: every CUDA device, or one CPU device when there is none
  std::int64_t chunks = 1;
  Checkpoint checkpoint = Checkpoint::ExceptLast;
  bool deferredBatchNorm = false;
};

class PipeImpl;

/// Splits `module` by `balance` and runs it as a pipeline. forward() returns a tensor
/// connected to autograd; loss.backward() runs the pipeline's backward on the partitions'
/// workers and accumulates every parameter's gradient exactly as for the unpartitioned module.
///
/// Throws std::invalid_argument (bad balance, chunks, devices, duplicate children/parameters,
/// unmatched skip stash/pop pairs) with a message naming the bad values.
class Pipe {
 public:
  Pipe(torch::nn::Sequential module, std::vector<std::int64_t> balance, PipeOptions options = {});
  ~Pipe();
  Pipe(Pipe&&) noexcept;
  Pipe& operator=(Pipe&&) noexcept;

  torch::Tensor forward(const torch::Tensor& input);
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& inputs);

  const std::vector<std::int64_t>& balance() const;
  const std::vector<torch::Device>& devices() const;
  const PipeOptions& options() const;

  /// The wrapped module's parameters (on their partitions' devices), in the module's order.
  std::vector<torch::Tensor> parameters() const;
  /// The wrapped module (its children live on their partitions' devices).
  torch::nn::Sequential module() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool isTraining() const;

  /// Per-partition peak bytes of the last step (forward + backward), as defined in
  /// docs/formats.md: parameters, gradients, activations kept for backward, skip tensors and
  /// transients, attributed to the partition whose worker allocated them.
  std::vector<Bytes> peakBytes() const;
  /// Starts a new measurement window for peakBytes() (done automatically at each forward).
  void resetPeakBytes();

  /// Emits a span for every op of every (i, j) when the tracer is enabled; null to stop.
  void setTracer(HostTracer* tracer);

 private:
  std::unique_ptr<PipeImpl> impl_;
};

}  // namespace pipeprof
