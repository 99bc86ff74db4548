// Shared CLI flags for choosing a model and its batch, and device names.
#include "model_options.h"

#include "commands.h"

#include <stdexcept>

namespace pipeprof::cli {

ModelSpec ModelFlags::spec() const {
  ModelSpec spec;
  spec.name = model;
  spec.options.width = width;
  spec.options.depth = depth;
  spec.options.seed = seed;
  spec.threads = threads;
  return spec;
}

CLI::Validator atLeastOne(const std::string& whenLeftOut) {
  return CLI::Validator(
      [whenLeftOut](std::string& text) -> std::string {
        std::int64_t value = 0;
        if (CLI::detail::lexical_cast(text, value) && value >= 1) return "";
        return "must be an integer of at least 1, got " + text + " (leave the flag out for " + whenLeftOut + ")";
      },
      "INT>=1");
}

void addModelFlags(CLI::App& command, ModelFlags& flags) {
  command.add_option("--model", flags.model, "zoo model name (see `pipeprof models`) or TorchScript file (.pt)")
      ->capture_default_str();
  command.add_option("--batch", flags.batch, "mini-batch size in samples (default: the model's default batch)")
      ->check(atLeastOne("the model's default batch"));
  command.add_option("--width", flags.width, "model width: hidden size / channels (default: the model's)")
      ->check(atLeastOne("the model's width"));
  command.add_option("--depth", flags.depth, "model depth: blocks / layers (default: the model's)")
      ->check(atLeastOne("the model's depth"));
  command.add_option("--seed", flags.seed, "parameter initialisation seed")->capture_default_str();
  command.add_option("--threads", flags.threads, "intra-op threads of LibTorch and OpenBLAS (default: their own choice)")
      ->check(atLeastOne("the default thread count"));
}

Model buildModelFromFlags(const ModelFlags& flags) {
  try {
    return buildModel(flags.spec());
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model) {
  return flags.batch > 0 ? flags.batch : model.defaultBatch;
}

std::vector<DeviceDesc> parseDevicesFlag(const std::string& text) {
  try {
    return parseDeviceList(text);
  } catch (const std::invalid_argument& error) {
    throw UsageError(std::string("--devices: ") + error.what());
  }
}

}  // namespace pipeprof::cli
