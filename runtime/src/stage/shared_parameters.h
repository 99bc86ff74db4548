// Parameters shared by layers of stages on different pipeline devices (a language model's tied
// embedding and head): replicated on each device, their gradients summed once per step.
//
// A stage can only use a tensor on its own device, so where layers of two pipeline devices hold
// the same parameter, the first device keeps it and each later one gets a replica: a copy of
// it that the later layers hold in its place (a layer must be able to take one:
// ReplicaHolder). Both train as one parameter would: after a step's backward the gradients
// of all copies are summed, in pipeline-device order so every copy gets the same bits, and
// written to every copy; each device's optimizer then steps its own copy with the same
// gradient and state, so the copies stay identical (Megatron's and DeepSpeed's tied layers).
// The stage core sums them once the step's backward ops ran (StageCore::sumSharedGradients):
// between threads every copy is the process's own, between ranks each sends its gradients to
// the others and gets theirs first (shared_gradient_exchange.h).
#pragma once

#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/runtime/layer_hooks.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeprof {

/// A parameter that more than one layer of a Sequential holds.
struct SharedParameterUse {
  std::string name;                  ///< as the first layer holding it names it
  std::vector<std::int64_t> layers;  ///< the layers holding it, ascending
  torch::Tensor tensor;
};

/// Every parameter that two or more layers hold (the same tensor), in the order of the layers
/// that first hold them.
std::vector<SharedParameterUse> findSharedParameters(const torch::nn::Sequential& module);

/// One parameter held by layers of more than one pipeline device.
struct SharedParameter {
  std::string name;  ///< as the first layer holding it names it ("embed.tokens.weight")
  struct Copy {
    std::int64_t d = 0;      ///< pipeline device
    std::int64_t stage = 0;  ///< the first stage on d whose layers hold it
    torch::Tensor tensor;    ///< the original on the first device, a replica on the others
  };
  std::vector<Copy> copies;  ///< by pipeline device, ascending; another process's tensor undefined
};

/// Finds the parameters the layers of stages on different pipeline devices (stage j on device
/// shape.deviceOfStage(j)) share, and gives each device but the first user's a replica (a
/// detached copy, requiring grad as the original does) held by its layers. Call before the
/// layers move to their devices. Throws std::invalid_argument naming the layers when one that
/// must hold a replica cannot.
std::vector<SharedParameter> replicateSharedParameters(const torch::nn::Sequential& module, const PipelineShape& shape);

/// The gradients of the copies other processes hold, by parameter (index into the shared
/// parameters) and pipeline device: what the ranks' exchange brings (shared_gradient_exchange.h).
using PeerGradients = std::map<std::size_t, std::map<std::int64_t, torch::Tensor>>;

/// After a step's backward: the sum of every copy's gradient of each parameter, in pipeline
/// device order (an undefined one counting as zeros), written to each copy this process holds
/// (a copy with a defined tensor), in place where its gradient exists. The copies of other
/// processes come from `peers`; in one process every copy is its own.
void sumSharedGradients(const std::vector<SharedParameter>& shared, const PeerGradients& peers = {});

}  // namespace pipeprof
