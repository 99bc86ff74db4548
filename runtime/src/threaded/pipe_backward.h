// The autograd nodes of a Pipe's outputs: a non-blocking gradient hand-off and the backward.
//
// loss.backward() reaches the Pipe through two nodes:
//
//   caller's graph: ... ──► gradients of the Pipe's outputs
//                                   │  autograd runs a node on the thread of its input
//                                   ▼  gradients' device: cuda:N's thread (or the caller's, CPU)
//   PipeGradientHandoff::apply      splits the gradients per micro-batch, hands them to the
//     (never blocks)                step and starts the workers ───────────┐
//                                   │                                      ▼
//                                   │ returns the gradient of     workers: recompute(i,j) and
//                                   │ the phony (zero-size CPU)   backward(i,j), each through its
//                                   ▼                             own torch::autograd::backward,
//   PipeBackward::apply             its only input is on the      whose CUDA nodes run on the
//     (blocks)                      CPU, so it runs on the        device threads (free: nothing
//                                   thread that called backward() of ours blocks them)
//                                   waits for the workers ◄───────────────┘
//                                   │ rethrows their first error as a PipeError
//                                   ▼
//   caller's graph: gradients of the Pipe's inputs ──► their grad_fn / AccumulateGrad
//
// A single node that received the output gradients and waited for the workers would block
// cuda:N's autograd thread while the workers' own backward enqueue their CUDA nodes on that
// same thread: a deadlock. On the CPU both nodes run on the caller's thread, one after the
// other. With one stage the hand-off starts nothing and PipeBackward runs the ops itself.
#pragma once

#include "stage/microbatch.h"
#include "threaded/phase_run.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pipeprof {

/// What the backward needs to know of a Pipe input (metadata only, no storage kept alive).
struct InputInfo {
  std::vector<std::int64_t> sizes;
  torch::TensorOptions options;
  bool requiresGrad = false;
  std::vector<std::int64_t> rows;  ///< per micro-batch
};

/// Connects a step's gathered outputs to autograd: every floating-point output gets a
/// PipeGradientHandoff as grad_fn, whose next edge is a phony tensor's PipeBackward, whose
/// next edges are the inputs'. `backward` is the step's backward phase (not started);
/// `outputRows[k]` are output k's rows per micro-batch.
void connectBackward(Tensors& outputs, const Tensors& inputs, std::shared_ptr<PhaseRun> backward,
                     std::vector<std::vector<std::int64_t>> outputRows, std::vector<InputInfo> inputInfos);

}  // namespace pipeprof
