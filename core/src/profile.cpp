// The layer profile (pipeprof.profile/v1): measured per-layer costs of a model on a device type.
#include <pipeprof/core/profile.h>

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/units.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

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

/// The optional figures of a sample handled alike: on the line between two samples that both
/// have one, written only where measured (so older profiles write back byte for byte as before),
/// read as non-negative integers, 0 at size 0.
struct OptionalFigure {
  const char* name;
  std::optional<std::int64_t> CostSample::*field;
};
constexpr OptionalFigure kOptionalFigures[] = {
    {"inner_backward_workspace_bytes", &CostSample::innerBackwardWorkspaceBytes},
    {"backward_end_rise_bytes", &CostSample::backwardEndRiseBytes},
    {"input_end_rise_bytes", &CostSample::inputEndRiseBytes},
    {"saved_freed_by_next_bytes", &CostSample::savedFreedByNextBytes},
    {"forward_no_grad_ns", &CostSample::forwardNoGradNs},
};

/// One pass's launch data at microBatch on the line through a's and b's; absent unless both have it.
std::optional<LaunchCost> interpolateLaunch(const CostSample& a, const CostSample& b, std::int64_t microBatch,
                                            std::optional<LaunchCost> CostSample::*pass) {
  const std::optional<LaunchCost>& first = a.*pass;
  const std::optional<LaunchCost>& second = b.*pass;
  if (!first || !second) return std::nullopt;
  auto at = [&](std::int64_t LaunchCost::*field) {
    return onLine(a.microBatch, (*first).*field, b.microBatch, (*second).*field, microBatch);
  };
  LaunchCost launch;
  launch.hostNs = at(&LaunchCost::hostNs);
  launch.deviceNs = at(&LaunchCost::deviceNs);
  launch.kernels = at(&LaunchCost::kernels);
  if (launch.deviceNs > 0 && launch.kernels < 1) launch.kernels = 1;  // device time runs in kernels
  return launch;
}

/// A single sample's launch data at microBatch: the device time proportional to size, the host
/// time and the kernel count as measured (launching does not grow with the batch).
std::optional<LaunchCost> scaleLaunch(const CostSample& only, std::int64_t microBatch,
                                      std::optional<LaunchCost> CostSample::*pass) {
  const std::optional<LaunchCost>& measured = only.*pass;
  if (!measured) return std::nullopt;
  LaunchCost launch = *measured;
  launch.deviceNs = onLine(0, 0, only.microBatch, measured->deviceNs, microBatch);
  if (launch.deviceNs > 0 && launch.kernels < 1) launch.kernels = 1;
  return launch;
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
  result.forwardLaunch = interpolateLaunch(a, b, microBatch, &CostSample::forwardLaunch);
  result.backwardLaunch = interpolateLaunch(a, b, microBatch, &CostSample::backwardLaunch);
  for (const OptionalFigure& figure : kOptionalFigures) {
    const std::optional<std::int64_t>& first = a.*figure.field;
    const std::optional<std::int64_t>& second = b.*figure.field;
    if (first && second) result.*figure.field = onLine(a.microBatch, *first, b.microBatch, *second, microBatch);
  }
  if (a.outputSavedBytes && b.outputSavedBytes) {
    result.outputSavedBytes =
        std::clamp<Bytes>(onLine(a.microBatch, *a.outputSavedBytes, b.microBatch, *b.outputSavedBytes, microBatch), 0,
                          result.outputBytes);
  }
  if (a.backwardSplit && b.backwardSplit) {
    auto split = [&](auto BackwardSplit::*field) {
      return onLine(a.microBatch, (*a.backwardSplit).*field, b.microBatch, (*b.backwardSplit).*field, microBatch);
    };
    result.backwardSplit =
        BackwardSplit{split(&BackwardSplit::inputNs), split(&BackwardSplit::weightNs),
                      split(&BackwardSplit::weightSavedBytes), split(&BackwardSplit::weightWorkspaceBytes)};
    // Each optional input figure where both samples have it, as the optional figures above:
    // a split built by hand may give one without the other.
    for (std::optional<Bytes> BackwardSplit::*field :
         {&BackwardSplit::inputWorkspaceBytes, &BackwardSplit::inputKeptBytes}) {
      const std::optional<Bytes>& first = (*a.backwardSplit).*field;
      const std::optional<Bytes>& second = (*b.backwardSplit).*field;
      if (first && second) {
        (*result.backwardSplit).*field = onLine(a.microBatch, *first, b.microBatch, *second, microBatch);
      }
    }
  }
  return result;
}

/// The JSON fields of the backward's I/W split, which come together.
constexpr const char* kSplitFields[] = {"backward_input_ns", "backward_weight_ns", "weight_saved_bytes",
                                        "weight_workspace_bytes"};
/// I's own memory fields, which came later: together, or neither (then estimated).
constexpr const char* kInputMemoryFields[] = {"input_workspace_bytes", "input_kept_bytes"};

/// The JSON fields of one pass's launch data: `<pass>_host_ns`, `<pass>_device_ns`, `<pass>_kernels`.
struct LaunchFields {
  std::string host;
  std::string device;
  std::string kernels;
  explicit LaunchFields(const std::string& pass)
      : host(pass + "_host_ns"), device(pass + "_device_ns"), kernels(pass + "_kernels") {}
  std::string all() const { return host + ", " + device + " and " + kernels; }
};

void launchToJson(const std::optional<LaunchCost>& launch, const std::string& pass, nlohmann::json& json) {
  if (!launch) return;
  const LaunchFields fields(pass);
  json[fields.host] = launch->hostNs;
  json[fields.device] = launch->deviceNs;
  json[fields.kernels] = launch->kernels;
}

nlohmann::json costToJson(const CostSample& cost) {
  nlohmann::json json = {{"micro_batch", cost.microBatch},
                         {"forward_ns", cost.forwardNs},
                         {"backward_ns", cost.backwardNs},
                         {"output_bytes", cost.outputBytes},
                         {"saved_bytes", cost.savedBytes},
                         {"forward_workspace_bytes", cost.forwardWorkspaceBytes},
                         {"backward_workspace_bytes", cost.backwardWorkspaceBytes}};
  // Written only when measured, so older profiles write back byte for byte as before.
  if (cost.outputSavedBytes) json["output_saved_bytes"] = *cost.outputSavedBytes;
  for (const OptionalFigure& figure : kOptionalFigures) {
    if (const std::optional<std::int64_t>& value = cost.*figure.field) json[figure.name] = *value;
  }
  launchToJson(cost.forwardLaunch, "forward", json);
  launchToJson(cost.backwardLaunch, "backward", json);
  if (cost.backwardSplit) {
    json[kSplitFields[0]] = cost.backwardSplit->inputNs;
    json[kSplitFields[1]] = cost.backwardSplit->weightNs;
    json[kSplitFields[2]] = cost.backwardSplit->weightSavedBytes;
    json[kSplitFields[3]] = cost.backwardSplit->weightWorkspaceBytes;
    if (cost.backwardSplit->inputWorkspaceBytes) {
      json[kInputMemoryFields[0]] = *cost.backwardSplit->inputWorkspaceBytes;
      json[kInputMemoryFields[1]] = cost.backwardSplit->inputKeptBytes.value_or(0);
    }
  }
  return json;
}

/// The backward's I/W split: its four fields together or none of them.
std::optional<BackwardSplit> backwardSplitFromJson(const JsonCursor& json) {
  int present = 0;
  for (const char* field : kSplitFields) present += static_cast<int>(json.has(field));
  if (present == 0) return std::nullopt;
  for (const char* field : kSplitFields) {
    if (!json.has(field)) {
      json.fail(std::string("missing field '") + field +
                "' (backward_input_ns, backward_weight_ns, weight_saved_bytes and weight_workspace_bytes come "
                "together)");
    }
  }
  BackwardSplit split;
  split.inputNs = json.at(kSplitFields[0]).asNonNegativeInt();
  split.weightNs = json.at(kSplitFields[1]).asNonNegativeInt();
  split.weightSavedBytes = json.at(kSplitFields[2]).asNonNegativeInt();
  split.weightWorkspaceBytes = json.at(kSplitFields[3]).asNonNegativeInt();
  const bool hasWorkspace = json.has(kInputMemoryFields[0]);
  if (hasWorkspace != json.has(kInputMemoryFields[1])) {
    json.fail(std::string("missing field '") + kInputMemoryFields[hasWorkspace ? 1 : 0] +
              "' (input_workspace_bytes and input_kept_bytes come together)");
  }
  if (hasWorkspace) {
    split.inputWorkspaceBytes = json.at(kInputMemoryFields[0]).asNonNegativeInt();
    split.inputKeptBytes = json.at(kInputMemoryFields[1]).asNonNegativeInt();
  }
  return split;
}

/// One pass's launch data: its three fields together or none of them.
std::optional<LaunchCost> launchFromJson(const JsonCursor& json, const std::string& pass) {
  const LaunchFields fields(pass);
  const int present = static_cast<int>(json.has(fields.host)) + static_cast<int>(json.has(fields.device)) +
                      static_cast<int>(json.has(fields.kernels));
  if (present == 0) return std::nullopt;
  for (const std::string* field : {&fields.host, &fields.device, &fields.kernels}) {
    if (!json.has(*field)) json.fail("missing field '" + *field + "' (" + fields.all() + " come together)");
  }
  LaunchCost launch;
  launch.hostNs = json.at(fields.host).asNonNegativeInt();
  launch.deviceNs = json.at(fields.device).asNonNegativeInt();
  launch.kernels = json.at(fields.kernels).asNonNegativeInt();
  if (launch.deviceNs > 0 && launch.kernels == 0) {
    json.at(fields.kernels)
        .fail("expected at least 1 kernel for " + fields.device + " " + std::to_string(launch.deviceNs) + ", got 0");
  }
  return launch;
}

CostSample costFromJson(const JsonCursor& json) {
  CostSample cost;
  cost.microBatch = json.at("micro_batch").asPositiveInt();
  cost.forwardNs = json.at("forward_ns").asNonNegativeInt();
  cost.backwardNs = json.at("backward_ns").asNonNegativeInt();
  cost.outputBytes = json.at("output_bytes").asNonNegativeInt();
  cost.savedBytes = json.at("saved_bytes").asNonNegativeInt();
  if (json.has("output_saved_bytes")) {
    const JsonCursor outputSaved = json.at("output_saved_bytes");
    cost.outputSavedBytes = outputSaved.asNonNegativeInt();
    if (*cost.outputSavedBytes > cost.outputBytes) {
      outputSaved.fail("expected at most output_bytes (" + std::to_string(cost.outputBytes) + "), got " +
                       std::to_string(*cost.outputSavedBytes));
    }
  }
  // `workspace_bytes`, one figure for both passes, is what profiles held before the split.
  const Bytes workspace = json.has("workspace_bytes") ? json.at("workspace_bytes").asNonNegativeInt() : 0;
  cost.forwardWorkspaceBytes =
      json.has("forward_workspace_bytes") ? json.at("forward_workspace_bytes").asNonNegativeInt() : workspace;
  cost.backwardWorkspaceBytes =
      json.has("backward_workspace_bytes") ? json.at("backward_workspace_bytes").asNonNegativeInt() : workspace;
  for (const OptionalFigure& figure : kOptionalFigures) {
    if (json.has(figure.name)) cost.*figure.field = json.at(figure.name).asNonNegativeInt();
  }
  cost.forwardLaunch = launchFromJson(json, "forward");
  cost.backwardLaunch = launchFromJson(json, "backward");
  cost.backwardSplit = backwardSplitFromJson(json);
  if (cost.forwardLaunch.has_value() != cost.backwardLaunch.has_value()) {
    const LaunchFields missing(cost.forwardLaunch ? "backward" : "forward");
    json.fail("missing " + missing.all() + " (a sample carries the launch data of both passes or of neither)");
  }
  return cost;
}

/// Launch data is a CUDA profile's, and a profile carries it on every cost sample or on none:
/// `first` is the path of the first sample read, `firstHas` whether it carried launch data.
struct LaunchConsistency {
  std::string deviceType;
  std::string firstPath;
  bool firstHas = false;

  void check(const JsonCursor& json, const CostSample& cost) {
    const bool has = cost.forwardLaunch.has_value();
    if (has && deviceType != "cuda") {
      json.at("forward_host_ns")
          .fail("expected no launch data on a profile whose environment.device_type is '" + deviceType +
                "' (launches are a CUDA device's)");
    }
    if (firstPath.empty()) {
      firstPath = json.path();
      firstHas = has;
    } else if (has != firstHas) {
      json.fail(std::string(has ? "unexpected" : "missing") + " launch data (" + firstPath +
                (firstHas ? " has it" : " has none") + "; a profile carries it on every cost sample or on none)");
    }
  }
};

/// An object's key naming an optimizer kind; fails at its value when it names none.
OptimizerKind optimizerKindOfKey(const std::string& name, const JsonCursor& value) {
  try {
    return parseOptimizerKind(name);
  } catch (const std::invalid_argument& error) {
    value.fail(error.what());
  }
}

/// {"sgd": {"ns": ..., "bytes": ...}, ...}: each optimizer kind's step of a layer.
std::map<OptimizerKind, OptimizerStepCost> optimizerStepsFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected an object keyed by optimizer kind");
  std::map<OptimizerKind, OptimizerStepCost> steps;
  for (const auto& [name, value] : json.value().items()) {
    const JsonCursor step = json.at(name);
    steps[optimizerKindOfKey(name, step)] =
        OptimizerStepCost{step.at("ns").asNonNegativeInt(), step.at("bytes").asNonNegativeInt()};
  }
  return steps;
}

nlohmann::json optimizerStepsToJson(const std::map<OptimizerKind, OptimizerStepCost>& steps) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [kind, step] : steps)
    json[std::string(optimizerName(kind))] = {{"ns", step.ns}, {"bytes", step.bytes}};
  return json;
}

/// CPU profiles only: at least two devices and a positive slowdown per optimizer kind.
OptimizerAtOnce optimizerAtOnceFromJson(const JsonCursor& json, const Profile& profile) {
  if (!json.value().is_object()) json.fail("expected an object with 'devices' and 'slowdown'");
  if (profile.onCuda()) {
    json.fail("expected none on a profile whose environment.device_type is 'cuda' (CUDA devices step in memories "
              "of their own)");
  }
  OptimizerAtOnce atOnce;
  atOnce.devices = json.at("devices").asNonNegativeInt();
  if (atOnce.devices < 2) json.at("devices").fail("expected at least 2, got " + std::to_string(atOnce.devices));
  const JsonCursor slowdown = json.at("slowdown");
  if (!slowdown.value().is_object() || slowdown.value().empty()) {
    slowdown.fail("expected an object keyed by optimizer kind, e.g. {\"sgd\": 1.2}");
  }
  for (const auto& [name, value] : slowdown.value().items()) {
    const JsonCursor ratio = slowdown.at(name);
    const OptimizerKind kind = optimizerKindOfKey(name, ratio);
    atOnce.slowdown[kind] = ratio.asNonNegativeNumber();
    if (!(atOnce.slowdown[kind] > 0)) ratio.fail("expected a positive ratio, got 0");
  }
  return atOnce;
}

/// A non-empty list of cost samples sorted by distinct micro_batch. `launches` checks each
/// sample's launch data; without it (the loss's samples) a sample may carry none.
std::vector<CostSample> costsFromJson(const JsonCursor& costs, LaunchConsistency* launches) {
  if (costs.size() == 0) costs.fail("expected at least one cost sample");
  std::vector<CostSample> samples;
  for (const JsonCursor& item : costs.items()) {
    CostSample cost = costFromJson(item);
    if (launches != nullptr) {
      launches->check(item, cost);
    } else if (cost.forwardLaunch) {
      item.fail("unexpected launch data (the loss carries none)");
    }
    if (!samples.empty() && cost.microBatch <= samples.back().microBatch) {
      item.at("micro_batch")
          .fail("costs must be sorted by micro_batch with distinct sizes (" + std::to_string(cost.microBatch) +
                " after " + std::to_string(samples.back().microBatch) + ")");
    }
    samples.push_back(cost);
  }
  return samples;
}

LayerProfile layerFromJson(const JsonCursor& json, LaunchConsistency& launches) {
  LayerProfile layer;
  layer.name = json.at("name").asString();
  layer.paramBytes = json.at("param_bytes").asNonNegativeInt();
  layer.gradBytes = json.has("grad_bytes") ? json.at("grad_bytes").asNonNegativeInt() : layer.paramBytes;
  layer.optimizerBytes = json.has("optimizer_bytes") ? json.at("optimizer_bytes").asNonNegativeInt() : 0;
  if (json.has("optimizer_step_ns")) layer.optimizerStepNs = json.at("optimizer_step_ns").asNonNegativeInt();
  if (json.has("optimizer_step_bytes")) layer.optimizerStepBytes = json.at("optimizer_step_bytes").asNonNegativeInt();
  if (json.has("cast_cache_bytes")) layer.castCacheBytes = json.at("cast_cache_bytes").asNonNegativeInt();
  if (json.has("optimizer_steps")) layer.optimizerSteps = optimizerStepsFromJson(json.at("optimizer_steps"));
  layer.costs = costsFromJson(json.at("costs"), &launches);
  return layer;
}

/// The loss's costs; it carries no launch data.
LossProfile lossFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected an object with 'costs'");
  LossProfile loss;
  loss.costs = costsFromJson(json.at("costs"), nullptr);
  if (json.has("keeps_output")) loss.keepsOutput = json.at("keeps_output").asBool();
  return loss;
}

ProfilingTime profilingTimeFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected an object with 'passes'");
  ProfilingTime profiling;
  if (json.has("budget_s")) profiling.budgetSeconds = json.at("budget_s").asNonNegativeNumber();
  if (json.has("fewest_timed_runs")) profiling.fewestTimedRuns = json.at("fewest_timed_runs").asNonNegativeInt();
  if (json.has("layers_from_identical")) {
    profiling.layersFromIdentical = json.at("layers_from_identical").asNonNegativeInt();
  }
  for (const JsonCursor& pass : json.at("passes").items()) {
    profiling.passes.push_back({pass.at("name").asString(), pass.at("seconds").asNonNegativeNumber()});
  }
  return profiling;
}

nlohmann::json toJson(const ProfilingTime& profiling) {
  nlohmann::json passes = nlohmann::json::array();
  for (const ProfilePass& pass : profiling.passes) passes.push_back({{"name", pass.name}, {"seconds", pass.seconds}});
  nlohmann::json out = {
      {"budget_s", profiling.budgetSeconds}, {"fewest_timed_runs", profiling.fewestTimedRuns}, {"passes", passes}};
  if (profiling.layersFromIdentical > 0) out["layers_from_identical"] = profiling.layersFromIdentical;
  return out;
}

ProfileEnvironment environmentFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected an object");
  ProfileEnvironment environment;
  if (json.has("model")) environment.model = json.at("model").asString();
  if (json.has("device_type")) environment.deviceType = json.at("device_type").asString();
  if (json.has("device_name")) environment.deviceName = json.at("device_name").asString();
  if (json.has("threads")) environment.threads = json.at("threads").asPositiveInt();
  if (json.has("torch_version")) environment.torchVersion = json.at("torch_version").asString();
  if (json.has("precision")) environment.precision = parseAt(json.at("precision"), parsePrecision);
  if (json.has("optimizer")) environment.optimizer = optimizerFromJson(json.at("optimizer"));
  if (json.has("profiling")) environment.profiling = profilingTimeFromJson(json.at("profiling"));
  return environment;
}

}  // namespace

double ProfilingTime::seconds() const {
  double total = 0.0;
  for (const ProfilePass& pass : passes) total += pass.seconds;
  return total;
}

std::string describeProfilingTime(const ProfilingTime& profiling) {
  auto duration = [](double seconds) { return formatDuration(static_cast<TimeNs>(std::llround(seconds * 1e9))); };
  std::string text = duration(profiling.seconds()) + " within a budget of " + duration(profiling.budgetSeconds);
  const char* separator = ": ";
  for (const ProfilePass& pass : profiling.passes) {
    text += separator + pass.name + " " + duration(pass.seconds);
    if (pass.name == "timed runs" && profiling.fewestTimedRuns > 0) {
      text += " (" + std::to_string(profiling.fewestTimedRuns) + " runs at the fewest, the memory passes' included)";
    }
    separator = ", ";
  }
  if (profiling.layersFromIdentical > 0) {
    text += "; " + std::to_string(profiling.layersFromIdentical) +
            " layers took an identical earlier layer's times (every layer's memory passes would have outlasted the "
            "budget)";
  }
  if (profiling.seconds() > 1.2 * profiling.budgetSeconds) {
    text += "; what a profile cannot do without (every pass but the extra timed runs) took longer than the budget";
  }
  return text;
}

CostSample costAtSize(const std::vector<CostSample>& costs, std::int64_t microBatch, const std::string& what) {
  if (microBatch <= 0) {
    throw std::invalid_argument(what + ": micro-batch size must be positive (got " + std::to_string(microBatch) + ")");
  }
  if (costs.empty()) throw std::invalid_argument(what + " has no cost samples");
  if (costs.size() == 1) {
    CostSample zero;
    zero.microBatch = 0;
    zero.forwardNs = zero.backwardNs = zero.outputBytes = zero.savedBytes = 0;
    zero.forwardWorkspaceBytes = zero.backwardWorkspaceBytes = 0;
    if (costs.front().outputSavedBytes) zero.outputSavedBytes = 0;
    for (const OptionalFigure& figure : kOptionalFigures) {
      if (costs.front().*figure.field) zero.*figure.field = 0;
    }
    if (costs.front().backwardSplit) {
      zero.backwardSplit = BackwardSplit{};
      if (costs.front().backwardSplit->inputWorkspaceBytes) {
        zero.backwardSplit->inputWorkspaceBytes = 0;
        zero.backwardSplit->inputKeptBytes = 0;
      }
    }
    CostSample result = interpolate(zero, costs.front(), microBatch);
    result.forwardLaunch = scaleLaunch(costs.front(), microBatch, &CostSample::forwardLaunch);
    result.backwardLaunch = scaleLaunch(costs.front(), microBatch, &CostSample::backwardLaunch);
    return result;
  }
  std::size_t upper = 1;  // the segment [upper-1, upper] used for microBatch
  while (upper + 1 < costs.size() && costs[upper].microBatch < microBatch) ++upper;
  const CostSample& a = costs[upper - 1];
  const CostSample& b = costs[upper];
  if (microBatch == a.microBatch) return a;
  if (microBatch == b.microBatch) return b;
  return interpolate(a, b, microBatch);
}

CostSample LossProfile::costAt(std::int64_t microBatch) const {
  if (!measured()) {
    CostSample none;
    none.microBatch = microBatch;
    return none;
  }
  return costAtSize(costs, microBatch, "the loss");
}

bool Profile::hasLaunchData() const {
  if (layers.empty()) return false;
  for (const LayerProfile& layer : layers) {
    if (layer.costs.empty()) return false;
    for (const CostSample& cost : layer.costs) {
      if (!cost.forwardLaunch || !cost.backwardLaunch) return false;
    }
  }
  return true;
}

bool Profile::hasBackwardSplit() const {
  if (layers.empty()) return false;
  for (const LayerProfile& layer : layers) {
    for (const CostSample& cost : layer.costs) {
      if (!cost.backwardSplit) return false;
    }
  }
  return true;
}

double OptimizerAtOnce::factor(OptimizerKind kind, std::int64_t stepping) const {
  const auto measuredKind = slowdown.find(kind);
  if (devices <= 1 || stepping <= 1 || measuredKind == slowdown.end()) return 1.0;
  const double perOtherDevice = (std::max(1.0, measuredKind->second) - 1.0) / static_cast<double>(devices - 1);
  return 1.0 + perOtherDevice * static_cast<double>(stepping - 1);
}

bool Profile::predictsOptimizer(OptimizerKind kind) const {
  if (kind == environment.optimizer.kind) return true;
  for (const LayerProfile& layer : layers) {
    if (layer.gradBytes > 0 && layer.optimizerSteps.count(kind) == 0) return false;
  }
  return true;
}

Profile withOptimizer(Profile profile, const OptimizerSpec& optimizer) {
  if (!profile.predictsOptimizer(optimizer.kind)) {
    std::string kinds;
    for (OptimizerKind kind : kOptimizerKinds) {
      if (!profile.predictsOptimizer(kind)) continue;
      kinds += (kinds.empty() ? "" : ", ") + std::string(optimizerName(kind));
    }
    throw std::invalid_argument("the profile was measured with " + describeOptimizer(profile.environment.optimizer) +
                                " and can stand for " + kinds + " only: it has no " +
                                std::string(optimizerName(optimizer.kind)) + " steps (optimizer_steps)");
  }
  const bool sameKind = optimizer.kind == profile.environment.optimizer.kind;
  for (LayerProfile& layer : profile.layers) {
    layer.optimizerBytes = optimizerStateCopies(optimizer.kind) * layer.gradBytes;
    if (sameKind) continue;
    const auto step = layer.optimizerSteps.find(optimizer.kind);
    const OptimizerStepCost cost = step == layer.optimizerSteps.end() ? OptimizerStepCost{} : step->second;
    layer.optimizerStepNs = cost.ns;
    layer.optimizerStepBytes = cost.bytes;
  }
  profile.environment.optimizer = optimizer;
  return profile;
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
    nlohmann::json item = {{"name", layer.name},
                           {"param_bytes", layer.paramBytes},
                           {"grad_bytes", layer.gradBytes},
                           {"optimizer_bytes", layer.optimizerBytes}};
    // Written only when measured, so older profiles write back byte for byte as before.
    if (layer.optimizerStepNs != 0) item["optimizer_step_ns"] = layer.optimizerStepNs;
    if (layer.optimizerStepBytes != 0) item["optimizer_step_bytes"] = layer.optimizerStepBytes;
    if (layer.castCacheBytes != 0) item["cast_cache_bytes"] = layer.castCacheBytes;
    if (!layer.optimizerSteps.empty()) item["optimizer_steps"] = optimizerStepsToJson(layer.optimizerSteps);
    item["costs"] = costs;
    layers.push_back(item);
  }
  nlohmann::json skips = nlohmann::json::array();
  for (const SkipProfile& skip : profile.skips) {
    nlohmann::json item = {{"name", skip.name},
                           {"stash_layer", skip.stashLayer},
                           {"pop_layer", skip.popLayer},
                           {"bytes_per_sample", skip.bytesPerSample},
                           {"unsaved_bytes_per_sample", skip.unsavedBytesPerSample}};
    if (skip.gradientSharedWithInput) item["gradient_shared_with_input"] = true;
    if (skip.gradientSharedInBackward) item["gradient_shared_in_backward"] = true;
    if (skip.gradientSliceOfOutput) item["gradient_slice_of_output"] = true;
    skips.push_back(item);
  }
  const ProfileEnvironment& environment = profile.environment;
  nlohmann::json json = {{"schema", kProfileSchema},
                         {"environment",
                          {{"model", environment.model},
                           {"device_type", environment.deviceType},
                           {"device_name", environment.deviceName},
                           {"threads", environment.threads},
                           {"torch_version", environment.torchVersion},
                           {"precision", precisionName(environment.precision)},
                           {"optimizer", toJson(environment.optimizer)}}},
                         {"input_bytes_per_sample", profile.inputBytesPerSample},
                         {"layers", layers},
                         {"skips", skips}};
  // Written only when measured here, so older profiles write back byte for byte as before.
  if (!environment.profiling.empty()) json["environment"]["profiling"] = toJson(environment.profiling);
  // Written only when there is one, so profiles without it write back byte for byte as before.
  if (profile.loss.measured()) {
    nlohmann::json costs = nlohmann::json::array();
    for (const CostSample& cost : profile.loss.costs) costs.push_back(costToJson(cost));
    json["loss"] = {{"keeps_output", profile.loss.keepsOutput}, {"costs", costs}};
  }
  if (profile.libraryWorkspaceBytes != 0) json["library_workspace_bytes"] = profile.libraryWorkspaceBytes;
  if (profile.optimizerAtOnce.measured()) {
    nlohmann::json slowdown = nlohmann::json::object();
    for (const auto& [kind, ratio] : profile.optimizerAtOnce.slowdown)
      slowdown[std::string(optimizerName(kind))] = ratio;
    json["optimizer_at_once"] = {{"devices", profile.optimizerAtOnce.devices}, {"slowdown", slowdown}};
  }
  if (!profile.sharedParameters.empty()) {
    nlohmann::json shared = nlohmann::json::array();
    for (const SharedParameterProfile& parameter : profile.sharedParameters) {
      shared.push_back({{"name", parameter.name}, {"layers", parameter.layers}, {"bytes", parameter.bytes}});
    }
    json["shared_parameters"] = shared;
  }
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
  if (root.has("optimizer_at_once"))
    profile.optimizerAtOnce = optimizerAtOnceFromJson(root.at("optimizer_at_once"), profile);
  JsonCursor layers = root.at("layers");
  if (layers.size() == 0) layers.fail("expected at least one layer");
  LaunchConsistency launches;
  launches.deviceType = profile.environment.deviceType;
  for (const JsonCursor& item : layers.items()) profile.layers.push_back(layerFromJson(item, launches));
  if (root.has("loss")) profile.loss = lossFromJson(root.at("loss"));
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
        item.at("pop_layer")
            .fail("pop layer " + std::to_string(skip.popLayer) + " must come after stash layer " +
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
      if (item.has("gradient_shared_with_input")) {
        skip.gradientSharedWithInput = item.at("gradient_shared_with_input").asBool();
      }
      if (item.has("gradient_shared_in_backward")) {
        skip.gradientSharedInBackward = item.at("gradient_shared_in_backward").asBool();
      }
      if (item.has("gradient_slice_of_output")) {
        skip.gradientSliceOfOutput = item.at("gradient_slice_of_output").asBool();
      }
      profile.skips.push_back(skip);
    }
  }
  if (root.has("shared_parameters")) {
    for (const JsonCursor& item : root.at("shared_parameters").items()) {
      SharedParameterProfile parameter;
      parameter.name = item.at("name").asString();
      const JsonCursor layerList = item.at("layers");
      for (const JsonCursor& layer : layerList.items()) {
        const std::int64_t index = layer.asNonNegativeInt();
        if (index >= profile.layerCount()) {
          layer.fail("layer " + std::to_string(index) + " is out of range (the model has layers 0.." +
                     std::to_string(profile.layerCount() - 1) + ")");
        }
        if (!parameter.layers.empty() && index <= parameter.layers.back()) {
          layer.fail("expected layers in ascending order, each once; got " + std::to_string(index) + " after " +
                     std::to_string(parameter.layers.back()));
        }
        parameter.layers.push_back(index);
      }
      if (parameter.layers.size() < 2) layerList.fail("expected at least two layers sharing the parameter");
      parameter.bytes = item.at("bytes").asNonNegativeInt();
      profile.sharedParameters.push_back(parameter);
    }
  }
  return profile;
}

Profile readProfile(const std::string& path) { return profileFromJson(readJsonFile(path), path); }

void writeProfile(const Profile& profile, const std::string& path) {
  writeFileAtomically(path, toJson(profile).dump(2) + "\n");
}

}  // namespace pipeprof
