// Finding, replicating and summing the parameters that layers of several pipeline devices share.
#include "stage/shared_parameters.h"

#include <map>
#include <stdexcept>

namespace pipeprof {

std::vector<SharedParameterUse> findSharedParameters(const torch::nn::Sequential& module) {
  const auto named = module->named_children();
  std::map<const void*, SharedParameterUse> uses;
  std::vector<const void*> order;  // first held first
  for (std::size_t layer = 0; layer < named.size(); ++layer) {
    for (const auto& parameter : named[layer].value()->named_parameters()) {
      const void* impl = parameter.value().unsafeGetTensorImpl();
      SharedParameterUse& use = uses[impl];
      if (use.layers.empty()) {
        use.name = named[layer].key() + "." + parameter.key();
        use.tensor = parameter.value();
        order.push_back(impl);
      }
      if (use.layers.empty() || use.layers.back() != static_cast<std::int64_t>(layer)) {
        use.layers.push_back(static_cast<std::int64_t>(layer));
      }
    }
  }
  std::vector<SharedParameterUse> shared;
  for (const void* impl : order) {
    if (uses.at(impl).layers.size() > 1) shared.push_back(std::move(uses.at(impl)));
  }
  return shared;
}

std::vector<SharedParameter> replicateSharedParameters(const torch::nn::Sequential& module,
                                                       const PipelineShape& shape) {
  const std::vector<std::int64_t>& balance = shape.balance;
  std::vector<std::int64_t> stageOf;
  for (std::size_t j = 0; j < balance.size(); ++j)
    stageOf.insert(stageOf.end(), balance[j], static_cast<std::int64_t>(j));
  const auto named = module->named_children();
  std::vector<SharedParameter> shared;
  for (const SharedParameterUse& use : findSharedParameters(module)) {
    std::map<std::int64_t, SharedParameter::Copy> byDevice;
    for (std::int64_t layer : use.layers) {
      const std::int64_t stage = stageOf.at(static_cast<std::size_t>(layer));
      const std::int64_t d = shape.deviceOfStage(stage);
      auto copy = byDevice.find(d);
      if (copy == byDevice.end()) {
        torch::Tensor tensor =
            byDevice.empty() ? use.tensor : use.tensor.detach().clone().requires_grad_(use.tensor.requires_grad());
        copy = byDevice.emplace(d, SharedParameter::Copy{d, stage, tensor}).first;
      }
      if (copy->second.tensor.is_same(use.tensor)) continue;  // the original's device
      const auto& layerModule = named[static_cast<std::size_t>(layer)];
      auto* holder = dynamic_cast<ReplicaHolder*>(layerModule.value().get());
      if (holder == nullptr) {
        const std::int64_t first = use.layers.front();
        throw std::invalid_argument("parameter '" + use.name + "' is shared by layer '" +
                                    named[static_cast<std::size_t>(first)].key() + "' (stage " +
                                    std::to_string(stageOf.at(static_cast<std::size_t>(first))) + ") and layer '" +
                                    layerModule.key() + "' (stage " + std::to_string(stage) +
                                    ") on another pipeline device, which cannot hold a replica of it (a TorchScript "
                                    "layer or the zoo's tied head can); put both in one stage");
      }
      holder->holdReplica(use.tensor, copy->second.tensor);
    }
    if (byDevice.size() < 2) continue;
    SharedParameter parameter;
    parameter.name = use.name;
    for (auto& [d, copy] : byDevice) parameter.copies.push_back(std::move(copy));
    shared.push_back(std::move(parameter));
  }
  return shared;
}

void sumSharedGradients(const std::vector<SharedParameter>& shared, const PeerGradients& peers) {
  torch::NoGradGuard noGrad;
  for (std::size_t s = 0; s < shared.size(); ++s) {
    const SharedParameter& parameter = shared[s];
    std::map<std::int64_t, torch::Tensor> byDevice;
    if (const auto fromPeers = peers.find(s); fromPeers != peers.end()) byDevice = fromPeers->second;
    const torch::Tensor* own = nullptr;  // the first copy this process holds: where the sum is made
    for (const SharedParameter::Copy& copy : parameter.copies) {
      if (!copy.tensor.defined()) continue;
      byDevice[copy.d] = copy.tensor.grad();
      if (own == nullptr) own = &copy.tensor;
    }
    if (own == nullptr) continue;
    torch::Tensor total;
    for (const auto& [d, grad] : byDevice) {  // ascending device: every process adds in one order
      if (!grad.defined()) continue;
      torch::Tensor here = grad.to(own->device());
      total = total.defined() ? total + here : here.clone();
    }
    if (!total.defined()) total = torch::zeros_like(*own);
    for (const SharedParameter::Copy& copy : parameter.copies) {
      if (!copy.tensor.defined()) continue;
      torch::Tensor& grad = copy.tensor.mutable_grad();
      if (grad.defined()) {
        grad.copy_(total);
      } else {
        grad = total.to(copy.tensor.device(), /*non_blocking=*/false, /*copy=*/true);
      }
    }
  }
}

}  // namespace pipeprof
