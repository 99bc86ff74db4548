// The layer profile (pipeprof.profile/v1): measured per-layer costs of a model on a device type.
#include <pipeprof/core/profile.h>

#include <pipeprof/core/json_file.h>

#include <cmath>
#include <stdexcept>

namespace pipeprof {
namespace {

/// The value at x on the line through (x0, v0) and (x1, v1), rounded and clamped at zero.
std::int64_t onLine(std::int64_t x0, std::int64_t v0, std::int64_t x1, std::int64_t v1, std::int64_t x) {
  long double numerator = static_cast<long double>(v0) * static_cast<long double>(x1 - x) +
                          static_cast<long double>(v1) * static_cast<long double>(x - x0);
  long double value = numerator / static_cast<long double>(x1 - x0);
  if (value <= 0.0L) return 0;
  return static_cast<std::int64_t>(std::llround(value));
}

CostSample interpolate(const CostSample& a, const CostSample& b, std::int64_t microBatch) {
  auto at = [&](std::int64_t CostSample::*field) {
    return onLine(a.microBatch, a.*field, b.microBatch, b.*field, microBatch);
  };
  CostSample result;
  result.microBatch = microBatch;
  result.forwardNs = at(&CostSample::forwardNs);
  result.backwardNs = at(&CostSample::backwardNs);
  result.outputBytes = at(&CostSample::outputBytes);
  result.savedBytes = at(&CostSample::savedBytes);
  result.forwardWorkspaceBytes = at(&CostSample::forwardWorkspaceBytes);
  result.backwardWorkspaceBytes = at(&CostSample::backwardWorkspaceBytes);
  return result;
}

nlohmann::json costToJson(const CostSample& cost) {
  return {{"micro_batch", cost.microBatch},
          {"forward_ns", cost.forwardNs},
          {"backward_ns", cost.backwardNs},
          {"output_bytes", cost.outputBytes},
          {"saved_bytes", cost.savedBytes},
          {"forward_workspace_bytes", cost.forwardWorkspaceBytes},
          {"backward_workspace_bytes", cost.backwardWorkspaceBytes}};
}

CostSample costFromJson(const JsonCursor& json) {
  CostSample cost;
  cost.microBatch = json.at("micro_batch").asPositiveInt();
  cost.forwardNs = json.at("forward_ns").asNonNegativeInt();
  cost.backwardNs = json.at("backward_ns").asNonNegativeInt();
  cost.outputBytes = json.at("output_bytes").asNonNegativeInt();
  cost.savedBytes = json.at("saved_bytes").asNonNegativeInt();
  // `workspace_bytes`, one figure for both passes, is what profiles held before the split.
  const Bytes workspace = json.has("workspace_bytes") ? json.at("workspace_bytes").asNonNegativeInt() : 0;
  cost.forwardWorkspaceBytes =
      json.has("forward_workspace_bytes") ? json.at("forward_workspace_bytes").asNonNegativeInt() : workspace;
  cost.backwardWorkspaceBytes =
      json.has("backward_workspace_bytes") ? json.at("backward_workspace_bytes").asNonNegativeInt() : workspace;
  return cost;
}

LayerProfile layerFromJson(const JsonCursor& json) {
  LayerProfile layer;
  layer.name = json.at("name").asString();
  layer.paramBytes = json.at("param_bytes").asNonNegativeInt();
  layer.gradBytes = json.has("grad_bytes") ? json.at("grad_bytes").asNonNegativeInt() : layer.paramBytes;
  layer.optimizerBytes = json.has("optimizer_bytes") ? json.at("optimizer_bytes").asNonNegativeInt() : 0;
  JsonCursor costs = json.at("costs");
  if (costs.size() == 0) costs.fail("expected at least one cost sample");
  for (const JsonCursor& item : costs.items()) {
    CostSample cost = costFromJson(item);
    if (!layer.costs.empty() && cost.microBatch <= layer.costs.back().microBatch) {
      item.at("micro_batch").fail("costs must be sorted by micro_batch with distinct sizes (" +
                                  std::to_string(cost.microBatch) + " after " +
                                  std::to_string(layer.costs.back().microBatch) + ")");
    }
    layer.costs.push_back(cost);
  }
  return layer;
}

ProfileEnvironment environmentFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected an object");
  ProfileEnvironment environment;
  if (json.has("model")) environment.model = json.at("model").asString();
  if (json.has("device_type")) environment.deviceType = json.at("device_type").asString();
  if (json.has("device_name")) environment.deviceName = json.at("device_name").asString();
  if (json.has("threads")) environment.threads = json.at("threads").asPositiveInt();
  if (json.has("torch_version")) environment.torchVersion = json.at("torch_version").asString();
  return environment;
}

}  // namespace

CostSample LayerProfile::costAt(std::int64_t microBatch) const {
  if (microBatch <= 0) {
    throw std::invalid_argument("layer '" + name + "': micro-batch size must be positive (got " +
                                std::to_string(microBatch) + ")");
  }
  if (costs.empty()) throw std::invalid_argument("layer '" + name + "' has no cost samples");
  if (costs.size() == 1) {
    CostSample zero;
    zero.microBatch = 0;
    zero.forwardNs = zero.backwardNs = zero.outputBytes = zero.savedBytes = 0;
    zero.forwardWorkspaceBytes = zero.backwardWorkspaceBytes = 0;
    return interpolate(zero, costs.front(), microBatch);
  }
  std::size_t upper = 1;  // the segment [upper-1, upper] used for microBatch
  while (upper + 1 < costs.size() && costs[upper].microBatch < microBatch) ++upper;
  const CostSample& a = costs[upper - 1];
  const CostSample& b = costs[upper];
  if (microBatch == a.microBatch) return a;
  if (microBatch == b.microBatch) return b;
  return interpolate(a, b, microBatch);
}

std::vector<SkipRoute> Profile::skipRoutes() const {
  std::vector<SkipRoute> routes;
  for (const SkipProfile& skip : skips) routes.push_back({skip.name, skip.stashLayer, skip.popLayer});
  return routes;
}

nlohmann::json toJson(const Profile& profile) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerProfile& layer : profile.layers) {
    nlohmann::json costs = nlohmann::json::array();
    for (const CostSample& cost : layer.costs) costs.push_back(costToJson(cost));
    layers.push_back({{"name", layer.name},
                      {"param_bytes", layer.paramBytes},
                      {"grad_bytes", layer.gradBytes},
                      {"optimizer_bytes", layer.optimizerBytes},
                      {"costs", costs}});
  }
  nlohmann::json skips = nlohmann::json::array();
  for (const SkipProfile& skip : profile.skips) {
    skips.push_back({{"name", skip.name},
                     {"stash_layer", skip.stashLayer},
                     {"pop_layer", skip.popLayer},
                     {"bytes_per_sample", skip.bytesPerSample},
                     {"unsaved_bytes_per_sample", skip.unsavedBytesPerSample}});
  }
  const ProfileEnvironment& environment = profile.environment;
  nlohmann::json json = {{"schema", kProfileSchema},
                         {"environment",
                          {{"model", environment.model},
                           {"device_type", environment.deviceType},
                           {"device_name", environment.deviceName},
                           {"threads", environment.threads},
                           {"torch_version", environment.torchVersion}}},
                         {"input_bytes_per_sample", profile.inputBytesPerSample},
                         {"layers", layers},
                         {"skips", skips}};
  // Written only when there is one, so profiles without it write back byte for byte as before.
  if (profile.libraryWorkspaceBytes != 0) json["library_workspace_bytes"] = profile.libraryWorkspaceBytes;
  return json;
}

Profile profileFromJson(const nlohmann::json& json, const std::string& file) {
  JsonCursor root(json, file);
  if (!json.is_object()) root.fail("expected an object with schema '" + std::string(kProfileSchema) + "'");
  root.requireSchema(kProfileSchema);
  Profile profile;
  if (root.has("environment")) profile.environment = environmentFromJson(root.at("environment"));
  profile.inputBytesPerSample = root.at("input_bytes_per_sample").asNonNegativeInt();
  if (root.has("library_workspace_bytes")) {
    const JsonCursor workspace = root.at("library_workspace_bytes");
    profile.libraryWorkspaceBytes = workspace.asNonNegativeInt();
    if (profile.libraryWorkspaceBytes != 0 && !profile.onCuda()) {
      workspace.fail("expected 0 on a profile whose environment.device_type is '" + profile.environment.deviceType +
                     "' (library workspaces are a CUDA device's), got " +
                     std::to_string(profile.libraryWorkspaceBytes));
    }
  }
  JsonCursor layers = root.at("layers");
  if (layers.size() == 0) layers.fail("expected at least one layer");
  for (const JsonCursor& item : layers.items()) profile.layers.push_back(layerFromJson(item));
  if (root.has("skips")) {
    JsonCursor skips = root.at("skips");
    for (const JsonCursor& item : skips.items()) {
      SkipProfile skip;
      skip.name = item.at("name").asString();
      if (skip.name.empty()) item.at("name").fail("expected a non-empty skip name");
      for (const SkipProfile& other : profile.skips) {
        if (other.name == skip.name) item.at("name").fail("duplicate skip name '" + skip.name + "'");
      }
      std::string range = " (the model has layers 0.." + std::to_string(profile.layerCount() - 1) + ")";
      skip.stashLayer = item.at("stash_layer").asNonNegativeInt();
      if (skip.stashLayer >= profile.layerCount()) {
        item.at("stash_layer").fail("stash layer " + std::to_string(skip.stashLayer) + " is out of range" + range);
      }
      skip.popLayer = item.at("pop_layer").asNonNegativeInt();
      if (skip.popLayer >= profile.layerCount()) {
        item.at("pop_layer").fail("pop layer " + std::to_string(skip.popLayer) + " is out of range" + range);
      }
      if (skip.stashLayer >= skip.popLayer) {
        item.at("pop_layer").fail("pop layer " + std::to_string(skip.popLayer) + " must come after stash layer " +
                                  std::to_string(skip.stashLayer));
      }
      skip.bytesPerSample = item.at("bytes_per_sample").asNonNegativeInt();
      skip.unsavedBytesPerSample = skip.bytesPerSample;
      if (item.has("unsaved_bytes_per_sample")) {
        skip.unsavedBytesPerSample = item.at("unsaved_bytes_per_sample").asNonNegativeInt();
        if (skip.unsavedBytesPerSample > skip.bytesPerSample) {
          item.at("unsaved_bytes_per_sample")
              .fail("expected at most bytes_per_sample (" + std::to_string(skip.bytesPerSample) + "), got " +
                    std::to_string(skip.unsavedBytesPerSample));
        }
      }
      profile.skips.push_back(skip);
    }
  }
  return profile;
}

Profile readProfile(const std::string& path) { return profileFromJson(readJsonFile(path), path); }

void writeProfile(const Profile& profile, const std::string& path) {
  writeFileAtomically(path, toJson(profile).dump(2) + "\n");
}

}  // namespace pipeprof
