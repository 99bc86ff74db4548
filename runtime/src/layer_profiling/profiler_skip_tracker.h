// The layer profiler's skip tracker: stash/pop for layers run one by one, with the bytes each stashed.
#pragma once

#include <pipeprof/core/precision.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof::layer_profiling {

/// Stash/pop for layers run one by one. Records the bytes stashed by each layer.
class ProfilerSkipTracker final : public SkipTracker {
 public:
  /// How a popping layer gets its skip.
  enum class HandOut {
    AsStashed,           ///< the stashed tensor, its graph alive (as in a Pipe)
    DetachedLeaf,        ///< a detached copy requiring grad (or under autocast a view of one:
                         ///< uncachedInputs), so the popping layer's backward computes its gradient
    DetachedWithoutGrad  ///< a detached copy that needs no gradient (see eachLayerAlone)
  };
  /// A skip by its stash layer and name.
  using LayerAndName = std::pair<std::int64_t, std::string>;

  explicit ProfilerSkipTracker(HandOut handOut, Precision precision = Precision::Fp32)
      : handOut_(handOut), precision_(precision) {}
  /// The layer whose stashes and pops follow.
  void setLayer(std::int64_t layer) { layer_ = layer; }
  void stash(const SkipKey& key, torch::Tensor tensor) override;
  torch::Tensor pop(const SkipKey& key) override;
  /// From now on keeps each popped skip, as handed out, for takeHandedOut().
  void keepHandedOut() { keepHandedOut_ = true; }
  /// The skips popped since the last call, by (stash layer, name), as handed out.
  std::vector<std::pair<LayerAndName, torch::Tensor>> takeHandedOut() { return std::exchange(handedOut_, {}); }
  /// Drops the stashed tensors and the popped ones watched (the recorded bytes stay).
  void clear();
  /// After a forward with the graph kept: the bytes of each popped skip that nothing keeps
  /// alive any more (all of it, or nothing when the backward graph saved it).
  void recordUnsavedBytes();
  /// Bytes the layer stashed under the name (or, when the name is not found, the only stash
  /// of that layer); 0 when unknown.
  Bytes stashedBytes(std::int64_t layer, const std::string& name) const { return lookup(stashedBytes_, layer, name); }
  /// The same for the part the backward graph did not save (see recordUnsavedBytes).
  Bytes unsavedBytes(std::int64_t layer, const std::string& name) const { return lookup(unsavedBytes_, layer, name); }

 private:
  static Bytes lookup(const std::map<LayerAndName, Bytes>& table, std::int64_t layer, const std::string& name);

  HandOut handOut_;
  Precision precision_;
  std::int64_t layer_ = -1;
  std::map<SkipKey, torch::Tensor> tensors_;
  std::map<SkipKey, std::int64_t> stashLayerOf_;
  std::map<LayerAndName, Bytes> stashedBytes_;
  std::map<LayerAndName, c10::weak_intrusive_ptr<c10::StorageImpl>> popped_;
  std::map<LayerAndName, Bytes> unsavedBytes_;
  bool keepHandedOut_ = false;
  std::vector<std::pair<LayerAndName, torch::Tensor>> handedOut_;
};

}  // namespace pipeprof::layer_profiling
