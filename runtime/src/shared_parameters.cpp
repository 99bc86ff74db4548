// Finding, replicating and summing the parameters that layers of several pipeline devices share.
#include "shared_parameters.h"

#include <map>
#include <stdexcept>

namespace pipeprof {
namespace {

/// Where a parameter is held: its name in its first layer, and the layers (indices) holding it.
struct Holders {
  std::string name;
  torch::Tensor tensor;
  std::vector<std::size_t> layers;
};

}  // namespace

std::vector<SharedParameter> replicateSharedParameters(const torch::nn::Sequential& module,
                                                       const std::vector<std::int64_t>& balance, std::int64_t p) {
  std::vector<std::int64_t> stageOf;
  for (std::size_t j = 0; j < balance.size(); ++j)
    stageOf.insert(stageOf.end(), balance[j], static_cast<std::int64_t>(j));
  const auto named = module->named_children();
  std::map<const void*, Holders> holders;
  std::vector<const void*> order;  // first seen first
  for (std::size_t layer = 0; layer < named.size(); ++layer) {
    for (const auto& parameter : named[layer].value()->named_parameters()) {
      const void* impl = parameter.value().unsafeGetTensorImpl();
      Holders& held = holders[impl];
      if (held.layers.empty()) {
        held.name = named[layer].key() + "." + parameter.key();
        held.tensor = parameter.value();
        order.push_back(impl);
      }
      if (held.layers.empty() || held.layers.back() != layer) held.layers.push_back(layer);
    }
  }
  std::vector<SharedParameter> shared;
  for (const void* impl : order) {
    const Holders& held = holders.at(impl);
    SharedParameter parameter;
    parameter.name = held.name;
    std::map<std::int64_t, SharedParameter::Copy> byDevice;
    for (std::size_t layer : held.layers) {
      const std::int64_t stage = stageOf.at(layer);
      const std::int64_t d = stage % p;
      auto copy = byDevice.find(d);
      if (copy == byDevice.end()) {
        torch::Tensor tensor =
            byDevice.empty() ? held.tensor : held.tensor.detach().clone().requires_grad_(held.tensor.requires_grad());
        copy = byDevice.emplace(d, SharedParameter::Copy{d, stage, tensor}).first;
      }
      if (copy->second.tensor.unsafeGetTensorImpl() == impl) continue;  // the original's device
      auto* holder = dynamic_cast<ReplicaHolder*>(named[layer].value().get());
      if (holder == nullptr) {
        throw std::invalid_argument("parameter '" + held.name + "' is shared by layer '" +
                                    named[held.layers.front()].key() + "' (stage " +
                                    std::to_string(stageOf.at(held.layers.front())) + ") and layer '" +
                                    named[layer].key() + "' (stage " + std::to_string(stage) +
                                    ") on another pipeline device, which cannot hold a replica of it (a TorchScript "
                                    "layer or the zoo's tied head can); put both in one stage");
      }
      holder->holdReplica(held.tensor, copy->second.tensor);
    }
    if (byDevice.size() < 2) continue;
    for (auto& [d, copy] : byDevice) parameter.copies.push_back(std::move(copy));
    shared.push_back(std::move(parameter));
  }
  return shared;
}

torch::Tensor sumInOrder(const std::vector<torch::Tensor>& grads, const torch::Tensor& like) {
  torch::NoGradGuard noGrad;
  torch::Tensor total;
  for (const torch::Tensor& grad : grads) {
    if (!grad.defined()) continue;
    torch::Tensor here = grad.to(like.device());
    total = total.defined() ? total + here : here.clone();
  }
  return total.defined() ? total : torch::zeros_like(like);
}

void sumSharedGradients(const std::vector<SharedParameter>& shared) {
  torch::NoGradGuard noGrad;
  for (const SharedParameter& parameter : shared) {
    for (const SharedParameter::Copy& copy : parameter.copies) {
      if (copy.tensor.is_cuda()) torch::cuda::synchronize(copy.tensor.device().index());  // the workers' streams
    }
    std::vector<torch::Tensor> grads;
    for (const SharedParameter::Copy& copy : parameter.copies) grads.push_back(copy.tensor.grad());
    const torch::Tensor total = sumInOrder(grads, parameter.copies.front().tensor);
    for (const SharedParameter::Copy& copy : parameter.copies) {
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
