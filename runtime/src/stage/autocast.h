// Autocast for one thread: the training step's forward in bf16 or fp16 over fp32 weights.
//
// Autocast's switch and its cache of cast weights belong to a thread. Every thread that runs a
// stage's forward (a pipeline device's worker, a rank) opens an AutocastScope for the whole
// step; the backward runs paused (its ops take the types the forward chose, as after
// torch.autocast's block in Python), and the cast cache is cleared when the step's scope
// closes, so a weight's cast copy lives for one step, as in a PyTorch training loop.
#pragma once

#include <pipeprof/core/precision.h>

#include <torch/torch.h>

#include <vector>

namespace pipeprof {

/// Throws std::invalid_argument when `precision` cannot run on `device`: fp16 needs a CUDA
/// device (LibTorch autocasts CPU ops to bf16 only).
void validatePrecision(Precision precision, const torch::Device& device);

/// Autocast to the precision's type on the device's type, on the calling thread, for the
/// scope's life; fp32 does nothing. On exit the previous switch and type come back and, when
/// the outermost scope closes, the thread's cast cache is cleared.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool previousEnabled_ = false;
  c10::ScalarType previousDtype_ = c10::ScalarType::Float;
};

/// Autocast off for every device type on the calling thread for the scope's life (a backward),
/// the cast cache kept; the previous switches come back on exit.
class AutocastPause {
 public:
  AutocastPause();
  ~AutocastPause();
  AutocastPause(const AutocastPause&) = delete;
  AutocastPause& operator=(const AutocastPause&) = delete;

 private:
  bool cpuEnabled_ = false;
  bool cudaEnabled_ = false;
};

/// Autocast's cache off on the calling thread for the scope's life (the cached copies kept, not
/// looked up). A forward without gradients opens one: autocast caches a weight's cast copy
/// whatever the grad mode, and a copy cast without a graph, looked up by a later forward that
/// keeps one, would cut the weight off from its gradient (a checkpointed micro-batch's forward
/// before the others' would leave the bias of a Linear without one).
class AutocastCacheOff {
 public:
  AutocastCacheOff();
  ~AutocastCacheOff();
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool previous_;
};

/// What a stage's layers get of the leaves it hands them (the skips it pops from other stages)
/// under autocast: views of them. Autocast caches the cast copy of every leaf that requires
/// grad -- meant for weights -- so such a leaf would keep a cast copy per micro-batch until the
/// step ends; a view is not cached, and its gradient reaches the leaf. fp32: the leaves
/// themselves. A stage's inputs need none: they are no leaves (stage_input.h).
std::vector<torch::Tensor> uncachedInputs(const std::vector<torch::Tensor>& leaves, Precision precision);

/// Frees the calling thread's cast copies (autocast's cache), as closing the outermost scope does.
void clearAutocastCache();

/// The scalar type a precision computes in: kFloat, kBFloat16, kHalf.
c10::ScalarType computeType(Precision precision);

}  // namespace pipeprof
