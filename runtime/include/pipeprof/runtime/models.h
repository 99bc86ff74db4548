// The model zoo (mlp, resnet, unet, gpt) and TorchScript loading: flat Sequentials with named layers.
#pragma once

#include <pipeprof/core/schedule.h>
#include <pipeprof/runtime/model.h>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipeprof {

/// Size knobs; 0 means the model's default (small enough for a sub-second CPU training step).
struct ModelOptions {
  std::int64_t width = 0;  ///< hidden width / channels / embedding size
  std::int64_t depth = 0;  ///< blocks / layers
  std::int64_t seed = 0;   ///< parameter initialisation seed
  /// gpt only: its output head's weight is its token embedding's (one parameter in two layers).
  bool tieEmbeddings = false;
  /// TorchScript models only: the shape of one input sample (without the batch dimension).
  /// Empty: read the scripted module's `pipeprof_input_shape` attribute (a list of ints).
  std::vector<std::int64_t> inputShape;
  /// TorchScript models only, each read from the scripted module's attribute of the same name
  /// (`pipeprof_input_dtype`, ...) when left empty or 0. inputDtype: "float" (the default,
  /// normal samples) or "long" (token ids drawn from [0, vocabSize)). loss: "mse" (the default:
  /// the output's mean square), "cross_entropy" (a [batch, numClasses] output against random
  /// labels) or "next_token" (a language model's [batch, T, vocabulary] logits against its
  /// token ids shifted by one).
  std::string inputDtype;
  std::int64_t vocabSize = 0;
  std::string loss;
  std::int64_t numClasses = 0;

  /// Whether any option only a TorchScript model takes is set.
  bool describesAnImportedModel() const {
    return !inputShape.empty() || !inputDtype.empty() || vocabSize > 0 || !loss.empty() || numClasses > 0;
  }
};

struct ModelInfo {
  std::string name;
  std::string description;
};

/// The built-in models, in a stable order ("mlp" first: it is the default).
std::vector<ModelInfo> zooModels();

/// Builds a zoo model by name, or loads a TorchScript file (path ending in ".pt"): a Sequential's
/// children become the layers, any other forward is split at its submodule calls (docs/runtime.md,
/// "Bringing a model"). Throws std::invalid_argument for an unknown name (listing the known ones)
/// or an unreadable/unsuitable file.
Model buildModel(const std::string& nameOrPath, const ModelOptions& options = {});

/// For a TorchScript model, whose sample shape a user gives (--input-shape, else its
/// pipeprof_input_shape attribute): runs two samples through the layers in turn, in eval mode
/// and without gradients, and throws std::invalid_argument naming the sample shape, the layer
/// that refused its input, that input's shape and the layer's own error. Nothing for a zoo model.
void checkSamplesFit(Model& model);

/// A model to build again for every run (each measured run trains a fresh one): what the
/// CLI's model flags name.
struct ModelSpec {
  std::string name = "mlp";  ///< zoo name or TorchScript file (.pt)
  ModelOptions options;
  std::int64_t threads = 0;  ///< intra-op threads set before building (setIntraOpThreads); 0: leave them
};

/// Sets the spec's intra-op threads, then builds its model. Throws std::invalid_argument as
/// buildModel does, and for negative threads.
Model buildModel(const ModelSpec& spec);

}  // namespace pipeprof
