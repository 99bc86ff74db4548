// Layers that run alike (identical_layers.h).
#include "layer_profiling/identical_layers.h"

#include "layer_profiling/profiling_scopes.h"
#include "stage/autocast.h"
#include "stage/shared_parameters.h"

#include <pipeprof/runtime/layer_hooks.h>
#include <pipeprof/runtime/skip.h>

#include <chrono>
#include <optional>
#include <set>
#include <sstream>
#include <string>

namespace pipeprof::layer_profiling {

namespace {

/// The memory passes at one size run about this many forwards of the model: pass 2's forward,
/// and passes 3, 3b and 4 each a forward and a backward of about two forwards (gpt --depth 64
/// on this project's CPU: 16 s of memory passes at sizes 8, 16, 32 and 64).
constexpr double kForwardsPerMemoryPasses = 10.0;

void describeTensor(std::ostringstream& out, const torch::Tensor& t) {
  if (!t.defined()) {
    out << "undefined;";
    return;
  }
  out << t.sizes() << ' ' << t.scalar_type() << (t.requires_grad() ? " grad" : "") << ';';
}

/// The layer's module tree, its tensors' shapes and its input's, or nullopt where the layer is
/// never shared.
std::optional<std::string> signatureOf(const torch::nn::Module& layer, const Tensors& in, const Tensors& out,
                                       const std::set<const void*>& sharedTensors) {
  if (dynamic_cast<const Skippable*>(&layer) != nullptr) return std::nullopt;
  for (const auto& module : layer.modules(/*include_self=*/true)) {
    // A Functional prints no function; a scripted layer nothing of its code.
    if (dynamic_cast<const torch::nn::FunctionalImpl*>(module.get()) != nullptr ||
        dynamic_cast<const ReplicaHolder*>(module.get()) != nullptr) {
      return std::nullopt;
    }
  }
  if (in.size() != out.size()) return std::nullopt;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!in[k].defined() || !out[k].defined() || in[k].sizes() != out[k].sizes() ||
        in[k].scalar_type() != out[k].scalar_type()) {
      return std::nullopt;
    }
  }
  std::ostringstream signature;
  signature << layer << '\n';
  for (const torch::Tensor& p : layer.parameters()) {
    if (sharedTensors.count(p.unsafeGetTensorImpl()) > 0) return std::nullopt;
    describeTensor(signature, p);
  }
  signature << '\n';
  for (const torch::Tensor& b : layer.buffers()) describeTensor(signature, b);
  signature << '\n';
  for (const torch::Tensor& t : in) describeTensor(signature, t);
  return signature.str();
}

}  // namespace

std::int64_t IdenticalLayers::copies() const {
  std::int64_t count = 0;
  for (std::size_t L = 0; L < sameAs.size(); ++L) count += sameAs[L] != static_cast<std::int64_t>(L);
  return count;
}

IdenticalLayers findIdenticalLayers(const Layers& layers, const torch::nn::Sequential& sequential, const Tensors& input,
                                    const torch::Device& device, Precision precision) {
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  std::set<const void*> sharedTensors;
  for (const SharedParameterUse& use : findSharedParameters(sequential)) {
    sharedTensors.insert(use.tensor.unsafeGetTensorImpl());
  }
  IdenticalLayers found;
  found.sameAs.resize(static_cast<std::size_t>(n));
  std::vector<std::optional<std::string>> signatures(static_cast<std::size_t>(n));
  torch::NoGradGuard noGrad;
  AutocastScope autocast(precision, device);
  const auto start = std::chrono::steady_clock::now();
  eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
    Tensors out = runLayer(*layers.modules[L], in, layers.names[L]);
    if (L > 0 && L + 1 < n) signatures[L] = signatureOf(*layers.modules[L]->ptr(), in, out, sharedTensors);
    return out;
  });
  synchronize(device);
  clearAutocastCache();  // pass 1 measures what each layer's casts hold
  found.forwardSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::int64_t L = 0; L < n; ++L) {
    found.sameAs[L] = L;
    if (!signatures[L]) continue;
    for (std::int64_t earlier = 1; earlier < L; ++earlier) {
      if (signatures[earlier] == signatures[L]) {
        found.sameAs[L] = earlier;
        break;
      }
    }
  }
  return found;
}

bool memoryPassesOutlast(const IdenticalLayers& found, std::int64_t smallest, std::int64_t sumOfSizes,
                         double budgetSeconds) {
  const double estimate =
      found.forwardSeconds * static_cast<double>(sumOfSizes) / static_cast<double>(smallest) * kForwardsPerMemoryPasses;
  return estimate > budgetSeconds;
}

void takeIdenticalFigures(const std::vector<std::int64_t>& sameAs, std::vector<CostSample>& costs,
                          std::vector<Bytes>& castCacheBytes) {
  for (std::size_t L = 0; L < sameAs.size(); ++L) {
    const auto from = static_cast<std::size_t>(sameAs[L]);
    if (from == L) continue;
    if (L < castCacheBytes.size()) castCacheBytes[L] = castCacheBytes[from];
    CostSample own = costs[L];
    costs[L] = costs[from];
    costs[L].outputBytes = own.outputBytes;
    costs[L].savedBytes = own.savedBytes;
    costs[L].forwardWorkspaceBytes = own.forwardWorkspaceBytes;
    costs[L].outputSavedBytes = own.outputSavedBytes;
    costs[L].savedFreedByNextBytes = own.savedFreedByNextBytes;
  }
}

}  // namespace pipeprof::layer_profiling
