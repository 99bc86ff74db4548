// Layers the zoo models share: skip stash/pop layers (residual add, U-Net concat) and activations.
#pragma once

#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

#include <string>

namespace pipeprof {

/// Stashes its input under `name` and passes it on.
class StashLayerImpl : public Skippable {
 public:
  explicit StashLayerImpl(const std::string& name) : Skippable({name}, {}), name_(name) {}
  torch::Tensor forward(const torch::Tensor& x) {
    stash(name_, x);
    return x;
  }

 private:
  std::string name_;
};
TORCH_MODULE(StashLayer);

/// Pops `name`, adds it to its input and applies ReLU (the end of a residual block).
class PopAddReluImpl : public Skippable {
 public:
  explicit PopAddReluImpl(const std::string& name) : Skippable({}, {name}), name_(name) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::relu(x + pop(name_)); }

 private:
  std::string name_;
};
TORCH_MODULE(PopAddRelu);

/// Pops `name` and concatenates it to its input along the channels (a U-Net decoder skip).
class PopConcatImpl : public Skippable {
 public:
  explicit PopConcatImpl(const std::string& name) : Skippable({}, {name}), name_(name) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::cat({x, pop(name_)}, 1); }

 private:
  std::string name_;
};
TORCH_MODULE(PopConcat);

}  // namespace pipeprof
