// The model zoo's registry: names, descriptions and dispatch to each model's builder or TorchScript.
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/torch_environment.h>

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

}  // namespace pipeprof
