// `pipeprof models`: the built-in models with their layer counts and parameter sizes.
#include "commands.h"

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/models.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace pipeprof::cli {
namespace {

void listModels(bool json) {
  nlohmann::json list = nlohmann::json::array();
  for (const ModelInfo& info : zooModels()) {
    const Model model = buildModel(info.name);
    Bytes paramBytes = 0;
    for (const torch::Tensor& parameter : model.sequential->parameters()) {
      paramBytes += static_cast<Bytes>(parameter.numel()) * static_cast<Bytes>(parameter.element_size());
    }
    list.push_back({{"name", info.name},
                    {"layers", static_cast<std::int64_t>(model.sequential->size())},
                    {"param_bytes", paramBytes},
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

}  // namespace

void addModelsCommand(CLI::App& app) {
  struct Flags {
    bool json = false;
  };
  auto [command, flags] = addCommand<Flags>(
      app, "models",
      {"List the built-in models (default size): name, layers, parameter bytes, description.",
       {"pipeprof models",
        "pipeprof models --json    # [{\"name\", \"layers\", \"param_bytes\", \"description\"}, ...]"}},
      [](const Flags& flags) { listModels(flags.json); });
  command.add_flag("--json", flags.json, "Print a JSON list");
}

}  // namespace pipeprof::cli
