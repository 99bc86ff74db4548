// The layer profiler's skip tracker (profiler_skip_tracker.h).
#include "layer_profiling/profiler_skip_tracker.h"

#include "layer_profiling/profiling_scopes.h"
#include "stage/autocast.h"

#include <stdexcept>

namespace pipeprof::layer_profiling {

void ProfilerSkipTracker::stash(const SkipKey& key, torch::Tensor tensor) {
  stashedBytes_[{layer_, key.second}] = bytesOf(tensor);
  stashLayerOf_[key] = layer_;
  if (handOut_ != HandOut::AsStashed) {
    tensor = tensor.detach();
    if (tensor.is_floating_point() && handOut_ == HandOut::DetachedLeaf) tensor.requires_grad_(true);
    tensor = uncachedInputs({tensor}, precision_).front();
  }
  tensors_[key] = std::move(tensor);
}

torch::Tensor ProfilerSkipTracker::pop(const SkipKey& key) {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) throw std::runtime_error("skip '" + key.second + "' was popped before it was stashed");
  torch::Tensor tensor = std::move(it->second);
  tensors_.erase(it);
  if (tensor.has_storage()) {
    popped_.insert_or_assign(LayerAndName{stashLayerOf_[key], key.second}, tensor.storage().getWeakStorageImpl());
  }
  if (keepHandedOut_) handedOut_.emplace_back(std::make_pair(stashLayerOf_[key], key.second), tensor);
  return tensor;
}

void ProfilerSkipTracker::clear() {
  tensors_.clear();
  popped_.clear();
}

void ProfilerSkipTracker::recordUnsavedBytes() {
  for (const auto& [key, storage] : popped_) unsavedBytes_[key] = storage.expired() ? stashedBytes_[key] : 0;
}

Bytes ProfilerSkipTracker::lookup(const std::map<LayerAndName, Bytes>& table, std::int64_t layer,
                                  const std::string& name) {
  const auto exact = table.find({layer, name});
  if (exact != table.end()) return exact->second;
  Bytes only = 0;
  int count = 0;
  for (const auto& [key, bytes] : table) {
    if (key.first == layer) {
      only = bytes;
      ++count;
    }
  }
  return count == 1 ? only : 0;
}

}  // namespace pipeprof::layer_profiling
