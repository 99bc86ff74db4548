// Stages: validating a Pipe's arguments, splitting the Sequential, moving layers, calling them.
#include "stage/stage.h"

#include <pipeprof/runtime/layer_hooks.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

namespace pipeprof {
namespace {

std::string listText(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    text += (k == 0 ? "" : ", ") + std::to_string(values[k]);
  }
  return text + "]";
}

bool isDropoutLike(const torch::nn::Module& module) {
  return dynamic_cast<const torch::nn::DropoutImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::Dropout2dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::Dropout3dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::AlphaDropoutImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::FeatureAlphaDropoutImpl*>(&module) != nullptr ||
         dynamic_cast<const Stochastic*>(&module) != nullptr;
}

Tensors asTensors(torch::nn::AnyValue& value, const std::string& layerName) {
  if (const auto* tensor = value.try_get<torch::Tensor>()) {
    return {*tensor};
  }
  if (const auto* tensors = value.try_get<std::vector<torch::Tensor>>()) {
    return *tensors;
  }
  throw std::invalid_argument("layer '" + layerName +
                              "' returned neither a Tensor nor a std::vector<torch::Tensor>; a layer inside a Pipe "
                              "must return one of them");
}

}  // namespace

void validatePipeArguments(const torch::nn::Sequential& module, const PipelineShape& shape, std::size_t deviceCount) {
  const std::vector<std::int64_t>& balance = shape.balance;
  const auto layers = static_cast<std::int64_t>(module->size());
  const std::int64_t total = std::accumulate(balance.begin(), balance.end(), std::int64_t{0});
  if (total != layers) {
    throw std::invalid_argument("module and sum of balance have different length (module: " + std::to_string(layers) +
                                ", sum of balance: " + std::to_string(total) + ")");
  }
  if (balance.empty() || std::any_of(balance.begin(), balance.end(), [](std::int64_t b) { return b <= 0; })) {
    throw std::invalid_argument("all balance numbers must be positive integer (balance: " + listText(balance) + ")");
  }
  const std::int64_t n = shape.stages();
  const std::int64_t p = shape.pipelineDevices();
  // The shape apart from the micro-batch count (checked after scattering): m = p passes.
  const std::string shapeProblem =
      scheduleShapeError(shape.schedule, shape.stagesPerDevice, n, std::max<std::int64_t>(p, 1));
  if (!shapeProblem.empty()) {
    throw std::invalid_argument(shapeProblem + " (balance: " + listText(balance) + ")");
  }
  if (shape.stagesPerDevice == 1 && deviceCount < balance.size()) {
    throw std::invalid_argument("too few devices to hold given partitions (devices: " + std::to_string(deviceCount) +
                                ", partitions: " + std::to_string(balance.size()) + ")");
  }
  if (deviceCount < static_cast<std::size_t>(p)) {
    throw std::invalid_argument("too few devices to hold given stages (devices: " + std::to_string(deviceCount) +
                                ", stages: " + std::to_string(n) + ", stages per device: " +
                                std::to_string(shape.stagesPerDevice) + ", devices needed: " + std::to_string(p) + ")");
  }
  const std::int64_t chunks = shape.chunks;
  if (chunks <= 0) {
    throw std::invalid_argument("number of chunks must be positive integer (chunks: " + std::to_string(chunks) + ")");
  }
  std::set<const torch::nn::Module*> children;
  for (const auto& child : module->children()) {
    if (!children.insert(child.get()).second) {
      throw std::invalid_argument("module with duplicate children is not supported");
    }
  }
}

std::vector<torch::Device> resolveDevices(const std::vector<torch::Device>& devices, std::size_t pipelineDevices) {
  if (!devices.empty()) {
    return devices;
  }
  std::vector<torch::Device> resolved;
  if (torch::cuda::is_available()) {
    for (std::size_t d = 0; d < torch::cuda::device_count(); ++d) {
      resolved.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(d));
    }
    return resolved;
  }
  // No accelerator: every pipeline device is the CPU (each still has its own worker).
  resolved.assign(pipelineDevices, torch::Device(torch::kCPU));
  return resolved;
}

std::vector<StageSkipRoute> stageSkipRoutes(const torch::nn::Sequential& module,
                                            const std::vector<std::int64_t>& balance) {
  const auto stageOf = [&](std::int64_t layer) {
    std::int64_t end = 0;
    for (std::size_t j = 0; j < balance.size(); ++j) {
      end += balance[j];
      if (layer < end) return static_cast<std::int64_t>(j);
    }
    return static_cast<std::int64_t>(balance.size()) - 1;
  };
  std::vector<StageSkipRoute> routes;
  const std::vector<SkipRouteKey> keys = skipRouteKeys(module);
  for (std::size_t s = 0; s < keys.size(); ++s) {
    routes.push_back(
        {keys[s].key, static_cast<std::int64_t>(s), stageOf(keys[s].stashLayer), stageOf(keys[s].popLayer)});
  }
  return routes;
}

const StageSkipRoute* crossRoute(const std::vector<StageSkipRoute>& routes, const SkipKey& key, std::int64_t j,
                                 bool stashing) {
  for (const auto& route : routes) {
    if (route.key == key && (stashing ? route.stashJ : route.popJ) == j && route.stashJ != route.popJ) return &route;
  }
  return nullptr;
}

torch::Tensor leafOf(const torch::Tensor& tensor, bool requiresGrad) {
  torch::Tensor leaf = tensor.detach();
  if (requiresGrad && (leaf.is_floating_point() || leaf.is_complex())) leaf.requires_grad_(true);
  return leaf;
}

std::vector<Stage> splitModule(const torch::nn::Sequential& module, const PipelineShape& shape,
                               const std::vector<torch::Device>& devices) {
  const std::vector<std::int64_t>& balance = shape.balance;
  std::vector<Stage> stages;
  auto named = module->named_children();
  std::int64_t layer = 0;
  std::vector<std::set<const void*>> held(devices.size());  // by pipeline device: the parameters of its stages so far
  for (std::size_t j = 0; j < balance.size(); ++j) {
    Stage stage;
    stage.j = static_cast<std::int64_t>(j);
    stage.firstLayer = layer;
    stage.d = shape.deviceOfStage(stage.j);
    stage.device = devices.at(static_cast<std::size_t>(stage.d));
    for (std::int64_t k = 0; k < balance[j]; ++k, ++layer) {
      const auto index = static_cast<std::size_t>(layer);
      std::shared_ptr<torch::nn::Module> child = module->ptr(index);
      child->to(stage.device);
      for (const auto& descendant : child->modules(/*include_self=*/true)) {
        stage.stochastic = stage.stochastic || isDropoutLike(*descendant);
      }
      for (const auto& parameter : child->named_parameters()) {
        const torch::Tensor& tensor = parameter.value();
        if (!held[static_cast<std::size_t>(stage.d)].insert(tensor.unsafeGetTensorImpl()).second) continue;
        stage.parameters.push_back(tensor);
        stage.parameterNames.push_back(named[index].key() + "." + parameter.key());
        stage.parameterBytes += static_cast<Bytes>(tensor.numel() * tensor.element_size());
      }
      stage.layers.push_back(*std::next(module->begin(), layer));
      stage.names.push_back(named[index].key());
    }
    stages.push_back(std::move(stage));
  }
  return stages;
}

Tensors runLayers(const Stage& stage, Tensors inputs) {
  for (std::size_t k = 0; k < stage.layers.size(); ++k) {
    torch::nn::AnyModule& layer = const_cast<torch::nn::AnyModule&>(stage.layers[k]);
    torch::nn::AnyValue value = inputs.size() == 1 ? layer.any_forward(inputs.front()) : layer.any_forward(inputs);
    inputs = asTensors(value, stage.names[k]);
  }
  return inputs;
}

}  // namespace pipeprof
