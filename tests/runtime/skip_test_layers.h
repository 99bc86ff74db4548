// Skippable test layers shared by the runtime and profiler tests: one stash, two pops, named skips.
#pragma once

#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

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

/// Pops its pop names (adding them to x), then stashes x * 2 under its stash names.
struct NamedSkipImpl : Skippable {
  NamedSkipImpl(std::vector<std::string> stashes, std::vector<std::string> pops)
      : Skippable(std::move(stashes), std::move(pops)) {}
  torch::Tensor forward(torch::Tensor x) {
    for (const auto& name : popNames()) {
      x = x + pop(name);
    }
    for (const auto& name : stashNames()) {
      stash(name, x * 2);
    }
    return x;
  }
};
TORCH_MODULE(NamedSkip);

inline NamedSkip makeSkip(std::vector<std::string> stashes, std::vector<std::string> pops) {
  return NamedSkip(std::move(stashes), std::move(pops));
}

}  // namespace pipeprof::testing
