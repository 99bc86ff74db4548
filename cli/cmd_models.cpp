// `pipeprof models [MODEL]`: the built-in models with their layer counts and parameter sizes, or
// one model's layers with what crosses the cut after each.
#include "commands.h"
#include "model_options.h"

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/models.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace pipeprof::cli {
namespace {

Bytes parameterBytes(const std::vector<torch::Tensor>& parameters) {
  Bytes bytes = 0;
  for (const torch::Tensor& parameter : parameters) {
    bytes += static_cast<Bytes>(parameter.numel()) * static_cast<Bytes>(parameter.element_size());
  }
  return bytes;
}

void listModels(bool json) {
  nlohmann::json list = nlohmann::json::array();
  for (const ModelInfo& info : zooModels()) {
    const Model model = buildModel(info.name);
    list.push_back({{"name", info.name},
                    {"layers", static_cast<std::int64_t>(model.sequential->size())},
                    {"param_bytes", parameterBytes(model.sequential->parameters())},
                    {"default_batch", model.defaultBatch},
                    {"description", info.description}});
  }
  if (json) {
    std::cout << list.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:<8} {:>6} {:>12}  {}\n", "name", "layers", "parameters", "description");
  for (const nlohmann::json& entry : list) {
    std::cout << fmt::format("{:<8} {:>6} {:>12}  {}\n", entry["name"].get<std::string>(),
                             entry["layers"].get<std::int64_t>(), formatBytes(entry["param_bytes"].get<Bytes>()),
                             entry["description"].get<std::string>());
  }
}

/// One model's layers: name (module path), parameter bytes, and what crosses the cut after it
/// (a stage beginning at the next layer receives it): the layer's output and every skip
/// stashed at or before it and popped after it.
void listLayers(const ModelFlags& flags, bool json) {
  Model model = buildModelFromFlags(flags);
  const std::vector<std::string> names = layerNames(model);
  nlohmann::json layers = nlohmann::json::array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    nlohmann::json crossing = nlohmann::json::array();
    if (i + 1 < names.size()) crossing.push_back("output");
    for (const SkipRoute& skip : model.skips) {
      if (skip.stashLayer <= static_cast<std::int64_t>(i) && static_cast<std::int64_t>(i) < skip.popLayer) {
        crossing.push_back(skip.name);
      }
    }
    layers.push_back({{"name", names[i]},
                      {"param_bytes", parameterBytes(model.sequential[i]->parameters())},
                      {"crossing", crossing}});
  }
  const nlohmann::json listing = {{"model", flags.model}, {"layers", layers}, {"unsplittable", model.unsplittable}};
  if (json) {
    std::cout << listing.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:>5}  {:<16} {:>12}  {}\n", "layer", "name", "parameters",
                           "crosses the cut after it (a stage may begin at the next layer)");
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string crossing;
    for (const auto& value : layers[i]["crossing"])
      crossing += (crossing.empty() ? "" : ", ") + value.get<std::string>();
    std::cout << fmt::format("{:>5}  {:<16} {:>12}  {}\n", i, names[i],
                             formatBytes(layers[i]["param_bytes"].get<Bytes>()), crossing);
  }
  for (const std::string& reason : model.unsplittable) std::cout << reason << "\n";
}

}  // namespace

void addModelsCommand(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    bool json = false;
  };
  auto [command, flags] = addCommand<Flags>(
      app, "models",
      {"List the built-in models (default size): name, layers, parameter bytes, description; or one model's "
       "layers (a zoo name or a TorchScript file): the names --split-at takes, their parameter bytes and what "
       "crosses the cut after each.",
       {"pipeprof models",
        "pipeprof models --json    # [{\"name\", \"layers\", \"param_bytes\", \"description\"}, ...]",
        "pipeprof models gpt --depth 2",
        "pipeprof models model.pt --json    # {\"model\", \"layers\": [{\"name\", \"param_bytes\", \"crossing\"}], "
        "\"unsplittable\"}"}},
      [](const Flags& flags) {
        if (flags.model.model.empty()) {
          listModels(flags.json);
        } else {
          listLayers(flags.model, flags.json);
        }
      });
  addModelFlags(command, flags.model);
  flags.model.model.clear();
  command.get_option("--model")->default_str("");
  command.add_option("MODEL", flags.model.model,
                     "A model whose layers to list: a zoo name or a TorchScript file (.pt)");
  command.add_flag("--json", flags.json, "Print JSON");
}

}  // namespace pipeprof::cli
