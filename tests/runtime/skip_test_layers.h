// Skippable test layers shared by the runtime and profiler tests: one stash, two pops.
#pragma once

#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

namespace pipeprof::testing {

/// Stashes x * 2 as "skip" (a tensor of its own) and passes x on.
struct StashImpl : Skippable {
  StashImpl() : Skippable({"skip"}, {}) {}
  torch::Tensor forward(torch::Tensor x) {
    stash("skip", x * 2);
    return x;
  }
};
TORCH_MODULE(Stash);

/// x * skip: the backward saves the skip.
struct PopMulImpl : Skippable {
  PopMulImpl() : Skippable({}, {"skip"}) {}
  torch::Tensor forward(torch::Tensor x) { return x * pop("skip"); }
};
TORCH_MODULE(PopMul);

/// x + skip: the backward saves neither operand.
struct PopAddImpl : Skippable {
  PopAddImpl() : Skippable({}, {"skip"}) {}
  torch::Tensor forward(torch::Tensor x) { return x + pop("skip"); }
};
TORCH_MODULE(PopAdd);

}  // namespace pipeprof::testing
