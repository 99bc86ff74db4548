// A stage's input as autograd sees it: the tensor received, no copy, and not a leaf, so a first
// layer that works in place (ReLU(inplace=True)) may write it.
//
// A leaf that requires grad refuses every in-place op ("a leaf Variable that requires grad is
// being used in an in-place operation"), and so does any view of one. A copy would free the
// leaf but costs the input's bytes per micro-batch in flight. Instead the received tensor is
// detached and given a gradient edge to a sink node: it is then an interior tensor of the
// stage's graph, an in-place op rebases its history as for any other, and backward ends in
// the sink, which keeps the input's gradient as a leaf's .grad() would (same bytes, same time).
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pipeprof {

class InputGradientSink;

/// One input of a stage for one micro-batch.
struct StageInput {
  torch::Tensor tensor;                     ///< what the stage's layers get
  std::shared_ptr<InputGradientSink> sink;  ///< where its gradient lands; null when none is needed

  /// The gradient backward left in the sink; undefined when none is needed or none reached it.
  torch::Tensor grad() const;
  /// The edge into the sink (what a backward asked for this input's gradient alone ends at);
  /// invalid when there is no sink.
  torch::autograd::Edge gradientEdge() const;
};

/// `grad` as a tensor of its own where it is a view into a larger one. The engine hands back
/// gradients as the graph made them: a concatenation's backward gives each input a slice of one
/// tensor, so an input's or a popped skip's gradient, held until the stage before (or the stash
/// stage) uses it, would keep the whole concatenation's gradient alive (unet: 1.5 MiB for a
/// 1 MiB input at 8 samples). A leaf's AccumulateGrad copies such a slice; the slice hooks copy
/// it as the node that slices returns (slice_hooks.h), the sink and I what no hook saw.
torch::Tensor gradientOfItsOwn(torch::Tensor grad);

/// `received` as a stage's input: detached (sharing its storage) and, when `requiresGrad` and
/// floating or complex, ending in a sink for its gradient.
StageInput stageInputOf(const torch::Tensor& received, bool requiresGrad);

/// The gradient backward left in the sink `tensor` ends at (a StageInput's tensor); undefined
/// when it ends at none or none reached it.
torch::Tensor sinkGradientOf(const torch::Tensor& tensor);

/// The tensors of `inputs`, in order.
std::vector<torch::Tensor> tensorsOf(const std::vector<StageInput>& inputs);

/// Whether any of `inputs` was written since `versions` were read (an in-place op on it or on
/// a view of it bumps its version counter).
bool writtenSince(const std::vector<torch::Tensor>& inputs, const std::vector<std::uint32_t>& versions);

/// The version counters of `inputs` (undefined tensors read 0).
std::vector<std::uint32_t> versionsOf(const std::vector<torch::Tensor>& inputs);

}  // namespace pipeprof
