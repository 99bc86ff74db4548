// Skippable test layers shared by the runtime and profiler tests: one stash, two pops, named skips.
#pragma once

#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace pipeprof::test {

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

/// [x, skip] along dimension 1: the backward hands each a slice of the output's gradient.
struct PopCatImpl : Skippable {
  PopCatImpl() : Skippable({}, {"skip"}) {}
  torch::Tensor forward(torch::Tensor x) { return torch::cat({x, pop("skip")}, 1); }
};
TORCH_MODULE(PopCat);

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

/// fc0, stash a, fc2, tanh3, fc4, pop a, stash b, fc7, tanh8, pop b, fc10, tanh11 (width 8).
/// Under balance [2, 2, 4, 4] on 2 devices (interleaved, v = 2) skip a goes from stage 0 to
/// stage 2, both on device 0, and skip b from stage 2 (device 0) to stage 3 (device 1).
inline torch::nn::Sequential skipModel() {
  torch::manual_seed(3);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(8, 8));
  model->push_back("stash_a", NamedSkip(std::vector<std::string>{"a"}, std::vector<std::string>{}));
  model->push_back("fc2", torch::nn::Linear(8, 8));
  model->push_back("tanh3", torch::nn::Tanh());
  model->push_back("fc4", torch::nn::Linear(8, 8));
  model->push_back("pop_a", NamedSkip(std::vector<std::string>{}, std::vector<std::string>{"a"}));
  model->push_back("stash_b", NamedSkip(std::vector<std::string>{"b"}, std::vector<std::string>{}));
  model->push_back("fc7", torch::nn::Linear(8, 8));
  model->push_back("tanh8", torch::nn::Tanh());
  model->push_back("pop_b", NamedSkip(std::vector<std::string>{}, std::vector<std::string>{"b"}));
  model->push_back("fc10", torch::nn::Linear(8, 8));
  model->push_back("tanh11", torch::nn::Tanh());
  return model;
}

inline torch::Tensor meanSquaredError(const torch::Tensor& output, const torch::Tensor& target) {
  return (output - target).pow(2).mean();
}

}  // namespace pipeprof::test
