// A TorchScript model whose forward does more than run its children, as pipeline layers.
#pragma once

#include <pipeprof/runtime/model.h>

#include <torch/script.h>

#include <string>

namespace pipeprof {

/// A module path as one name a torch::nn::Module accepts, which has no dot ("h.0.attn.weight"
/// -> "h_0_attn_weight").
std::string flatName(std::string path);

/// Appends the pieces of `scripted`'s forward split at its submodule calls (graph_split.h) to
/// the model's Sequential as layers, with their module paths and skip routes. Throws
/// std::invalid_argument naming `path` for a forward that cannot be split.
void addGraphLayers(const torch::jit::Module& scripted, const std::string& path, Model& model);

}  // namespace pipeprof
