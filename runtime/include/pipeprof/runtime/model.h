// A model as a pipeline trains it: a flat Sequential with named layers, its skips, its batch and its loss.
#pragma once

#include <pipeprof/core/schedule.h>
#include <pipeprof/runtime/loss_fn.h>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipeprof {

/// One training batch.
struct Batch {
  torch::Tensor input;
  torch::Tensor target;
};

/// What the training loops and the layer profiler take: the zoo builds one (models.h), a user
/// may build one by hand.
struct Model {
  std::string name;
  torch::nn::Sequential sequential;  ///< children are the layers, named
  /// The layers' module paths where their names cannot say them (a torch::nn name has no
  /// dot): a TorchScript model split at its submodule calls has layer "h_0" at "h.0". Empty:
  /// the names. layerNames() gives either.
  std::vector<std::string> layerPaths;
  /// A split model's submodule calls no layer begins at, each with why ("no stage may begin at
  /// 'fc': the value 'n' (int, ...) is not a tensor ..."): `pipeprof models` prints them.
  std::vector<std::string> unsplittable;
  std::vector<SkipRoute> skips;    ///< stash/pop routes between layers (layer indices)
  std::int64_t defaultBatch = 32;  ///< a batch the demo and tests use
  /// A deterministic random batch of `batch` samples for `seed`.
  std::function<Batch(std::int64_t batch, std::int64_t seed)> makeBatch;
  /// Scalar training loss of the model output against the batch target.
  LossFn loss;
};

/// The layers' names as a user gives them (--split-at, `pipeprof models`): their module paths
/// where the model has them, else the Sequential's names.
std::vector<std::string> layerNames(const Model& model);

}  // namespace pipeprof
