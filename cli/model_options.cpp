// Shared CLI flags for choosing a model and its batch, and device names.
#include "model_options.h"

#include "commands.h"

#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/tuner/environment_info.h>
#include <pipeprof/tuner/sweep.h>

#include <filesystem>

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
  return buildModel(flags.spec());  // std::invalid_argument (unknown model, bad file): exit 2 as a UsageError
}

std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model) {
  return flags.batch > 0 ? flags.batch : model.defaultBatch;
}

std::vector<DeviceDesc> parseDevicesFlag(const std::string& text) {
  return parseFlag("--devices", [&] { return parseDeviceList(text); });
}

ModelOnDevices resolveModelOnDevices(const ModelFlags& flags, const std::string& devicesText) {
  ModelOnDevices resolved;
  resolved.devices = parseDevicesFlag(devicesText);
  if (resolved.devices.empty()) throw UsageError("--devices: give at least one device, e.g. cpu,cpu");
  for (const DeviceDesc& device : resolved.devices) {
    if (device.type != resolved.devices.front().type) {
      throw UsageError("--devices '" + devicesText + "': mix of device types; use all cpu or all cuda");
    }
  }
  torchDevices(resolved.devices);  // CUDA present and indices in range
  const auto devices = static_cast<std::int64_t>(resolved.devices.size());
  resolved.spec = flags.spec();
  resolved.spec.threads = tuner::sweepThreads(flags.threads, devices, tuner::hardwareThreads());
  const Model model = buildModelFromFlags(flags);
  resolved.layers = static_cast<std::int64_t>(model.sequential->size());
  resolved.batch = batchFromFlags(flags, model);
  if (resolved.layers < devices) {
    throw UsageError("--devices: " + std::to_string(devices) + " devices need at least one layer each but model '" +
                     flags.model + "' has only " + std::to_string(resolved.layers) + " layers");
  }
  return resolved;
}

std::optional<Profile> readCachedProfile(const std::string& path, const ModelOnDevices& model) {
  if (path.empty() || !std::filesystem::exists(path)) return std::nullopt;
  Profile profile = readProfile(path);
  const std::string mismatch =
      tuner::profileMismatch(profile, model.spec, model.devices.front().typeName(), model.layers);
  if (!mismatch.empty()) {
    throw UsageError("cached profile " + path + " does not fit: " + mismatch +
                     "; delete it or name another --profile to re-profile");
  }
  return profile;
}

}  // namespace pipeprof::cli
