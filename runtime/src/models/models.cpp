// The model zoo's registry: names, descriptions and dispatch to each model's builder or TorchScript.
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/skip.h>
#include <pipeprof/runtime/torch_environment.h>

#include "models/imported_task.h"
#include "models/zoo.h"

#include <stdexcept>

namespace pipeprof {
namespace {

struct ZooEntry {
  const char* name;
  const char* description;
  Model (*build)(const ModelOptions&);
};

const std::vector<ZooEntry>& zooEntries() {
  static const std::vector<ZooEntry> entries = {
      {"mlp", "Linear+ReLU stack (width 512, depth 8 Linear layers), MSE regression", &buildMlp},
      {"resnet",
       "flattened bottleneck CNN, residuals as stash/pop skips (width 64, depth 4 blocks), 3x32x32 "
       "images, 10 classes",
       &buildResnet},
      {"unet", "encoder-decoder with stash/pop skips (width 16, depth 2 levels), 3x32x32 image to image, MSE",
       &buildUnet},
      {"gpt", "decoder-only transformer (width 128, depth 4 blocks, 256 tokens, sequence 32), next-token loss",
       &buildGpt},
  };
  return entries;
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::int64_t orDefault(std::int64_t value, std::int64_t fallback) { return value > 0 ? value : fallback; }

std::vector<ModelInfo> zooModels() {
  std::vector<ModelInfo> infos;
  for (const ZooEntry& entry : zooEntries()) {
    infos.push_back({entry.name, entry.description});
  }
  return infos;
}

Model buildModel(const std::string& nameOrPath, const ModelOptions& options) {
  if (options.width < 0 || options.depth < 0) {
    throw std::invalid_argument("model width and depth must be non-negative (width: " + std::to_string(options.width) +
                                ", depth: " + std::to_string(options.depth) + "); 0 selects the default");
  }
  if (options.tieEmbeddings && nameOrPath != "gpt") {
    throw std::invalid_argument("only the gpt zoo model ties its embedding and head ('" + nameOrPath +
                                "' has no option to; a TorchScript model ties them itself, as scripted)");
  }
  for (const ZooEntry& entry : zooEntries()) {
    if (nameOrPath != entry.name) continue;
    if (options.describesAnImportedModel()) {
      throw std::invalid_argument("the input shape, input dtype, vocabulary size, loss and classes describe a "
                                  "TorchScript model; '" +
                                  nameOrPath + "' is a zoo model with its own");
    }
    return entry.build(options);
  }
  if (endsWith(nameOrPath, ".pt")) {
    return loadTorchScriptModel(nameOrPath, options);
  }
  std::string known;
  for (const ZooEntry& entry : zooEntries()) {
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw std::invalid_argument("unknown model '" + nameOrPath + "' (known: " + known +
                              ", or a TorchScript file ending in .pt)");
}

Model buildModel(const ModelSpec& spec) {
  if (spec.threads < 0) {
    throw std::invalid_argument("intra-op threads must be at least 1 (or 0 to leave them), got " +
                                std::to_string(spec.threads));
  }
  if (spec.threads > 0) setIntraOpThreads(spec.threads);
  return buildModel(spec.name, spec.options);
}

std::vector<std::string> layerNames(const Model& model) {
  if (!model.layerPaths.empty()) return model.layerPaths;
  std::vector<std::string> names;
  for (const auto& named : model.sequential->named_children()) names.push_back(named.key());
  return names;
}

namespace {

/// The last line of an error that says something (TorchScript's end with the error itself).
std::string lastLine(const std::string& message) {
  const std::size_t end = message.find_last_not_of(" \n");
  if (end == std::string::npos) return message;
  const std::size_t newline = message.rfind('\n', end);
  const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return message.substr(begin, end + 1 - begin);
}

}  // namespace

void checkSamplesFit(Model& model) {
  if (!endsWith(model.name, ".pt")) return;
  const torch::Tensor samples = model.makeBatch(2, 0).input;
  const std::vector<std::string> names = layerNames(model);
  const bool training = model.sequential->is_training();
  model.sequential->eval();
  MapSkipTracker skips;  // the trial's skips, apart from the thread's
  ScopedSkipTracker scope(&skips);
  torch::NoGradGuard noGradients;
  torch::Tensor x = samples;
  std::size_t i = 0;
  for (auto& layer : *model.sequential) {
    const std::vector<std::int64_t> input = x.sizes().vec();
    try {
      x = layer.any_forward(x).get<torch::Tensor>();
    } catch (const std::exception& error) {
      model.sequential->train(training);
      const auto* torchError = dynamic_cast<const c10::Error*>(&error);
      throw std::invalid_argument("TorchScript model '" + model.name + "': its samples of shape " +
                                  shapeText(samples.sizes().slice(1)) +
                                  " (--input-shape, else its pipeprof_input_shape attribute) do not fit: layer '" +
                                  names.at(i) + "' refused an input of shape " + shapeText(input) + ": " +
                                  lastLine(torchError ? torchError->what_without_backtrace() : error.what()));
    }
    ++i;
  }
  model.sequential->train(training);
}

}  // namespace pipeprof
