// The layer profile builder: per-layer times, memory and skip sizes at several micro-batch sizes.
//
// Per micro-batch size b (see docs/profiler.md and the memory model's "Profile fields"):
//
//   memory (on the target device, tag = layer index; the library workspace measured first)
//     on CPU the tracked CPU allocator counts what the thread allocates under tag L; on CUDA
//     layer L runs with a stream of its own current whose caching-allocator blocks count
//     against tag L (TaggedStreams in device_memory.h; its backward runs on that stream too),
//     the device synchronised after each layer. Every (thread, stream) pair's library workspace
//     is created by pass 1, so it is in every "before" and never in a layer's figures.
//     1. one untimed pass (per-layer forward + backward) so every gradient already exists, as
//        in a training run whose grads are zeroed in place;
//     2. the whole model forward in training mode, layer L under tag L, keeping the graph:
//        output bytes, forward workspace (peak - live after the layer), and after the last
//        layer, its output let go (the graph kept), saved_bytes(L) = what tag L still holds,
//        each skip's unsaved bytes (its tensor's, when nothing holds that any more after the
//        pop) and output_saved_bytes(L) = the bytes of L's output whose storage the graph alone
//        still keeps alive;
//     3. per layer, on a detached copy of its input: forward untagged, backward under tag L:
//        backward workspace = peak above the bytes live when it started;
//     4. per layer, on a copy of its input made under tag L, forward and then the backward
//        split into I and W (split_backward.h): weight_saved_bytes = what W frees (what I kept
//        for it: the input when the weights' gradient needs it, the gradients it captured),
//        weight_workspace_bytes = W's peak above its start, input_workspace_bytes = I's peak
//        above its start (its output's gradient made inside; the graph is whole until I ends),
//        input_kept_bytes = the gradients I captured for W (WeightBackward::keptGradientBytes).
//   time (options.device)
//     warm-up passes, then passes until 2 x minRuns are done and the budget is spent (or a
//     cap): each pass runs the layers in order, each on a detached input that requires grad,
//     timing its forward and then torch::autograd::backward of its output alone, or on every
//     other pass that backward split into I and W; medians are kept.
//     On CUDA each pass also times the host up to the return of the forward and of the
//     backward, before the synchronize: the host's launch time (LaunchCost::hostNs).
//   precision (bf16, fp16)
//     every forward above runs under autocast, every backward paused, as in a pipeline step.
//     Pass 1 fills autocast's cache: what each layer's tag holds more before the cache is
//     cleared than after is its cast_cache_bytes; the cache is filled again (a forward without
//     gradients) before pass 2, so saved_bytes holds only each micro-batch's own copies.
//   loss (after pass 2, on its output; loss_profiler.cpp)
//     the model's loss of the last layer's output under tag n: what its graph keeps, its
//     forward's transient and its backward's peak (the output's gradient included), and the
//     median time of both passes.
//   optimizer (once, after the sizes)
//     per layer with trainable parameters, each optimizer kind over them (the profile's
//     hyperparameters where they apply), stepped once (its state: exactly
//     optimizerStateCopies x the gradients), then timed (median) with the transient peak above
//     the state under tag L: optimizer_steps, the profile's own kind's also as
//     optimizer_step_ns and optimizer_step_bytes, its state as optimizer_bytes.
//   kernels (CUDA, CUPTI's cheap mode)
//     one more pass, each layer's forward and backward captured alone: how many kernels each
//     ran and their summed device time. Without CUPTI the profile has no launch data at all.
//
// Skip tensors go through a tracker of our own: in the memory pass it keeps the stashed
// tensor as is (its graph alive, as in a Pipe); in timed passes it hands out detached copies,
// so a popping layer's backward stops at the skip instead of running the stasher's too.
#include <pipeprof/runtime/layer_profiler.h>

#include "autocast.h"
#include "device_memory.h"
#include "loss_profiler.h"
#include "make_optimizer.h"
#include "profiling_scopes.h"
#include "shared_parameters.h"
#include "split_backward.h"
#include "stage_input.h"

#include <pipeprof/core/allocator_rounding.h>
#include <pipeprof/core/statistics.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/skip.h>

#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace pipeprof {

namespace {

using Tensors = std::vector<torch::Tensor>;
constexpr std::int64_t kMaxRuns = 50;

Tensors asTensors(torch::nn::AnyValue& value, const std::string& layer) {
  if (const auto* tensor = value.try_get<torch::Tensor>()) return {*tensor};
  if (const auto* tensors = value.try_get<Tensors>()) return *tensors;
  throw std::invalid_argument("layer '" + layer +
                              "' returned neither a tensor nor a list of tensors; "
                              "the layer profiler needs one of those");
}

Tensors runLayer(torch::nn::AnyModule& layer, const Tensors& inputs, const std::string& name) {
  torch::nn::AnyValue value = inputs.size() == 1 ? layer.any_forward(inputs.front()) : layer.any_forward(inputs);
  return asTensors(value, name);
}

/// Layer L's inputs as a stage gets them (stage_input.h): detached, and floating ones ending
/// in a gradient sink so backward reaches them and an in-place layer may write them, except
/// the model's own input (L == 0): the Pipe's first partition gets the batch, which needs no
/// gradient, so the first layer's backward computes none for it (a Linear skips a whole GEMM)
/// and is profiled that way.
Tensors stageInputs(const Tensors& inputs, std::int64_t L) {
  Tensors out;
  out.reserve(inputs.size());
  for (const torch::Tensor& t : inputs) out.push_back(stageInputOf(t, L > 0).tensor);
  return out;
}

/// The outputs that need a gradient, with ones as their gradients.
struct BackwardRoots {
  Tensors roots;
  Tensors grads;
};

BackwardRoots backwardRoots(const Tensors& outputs) {
  BackwardRoots backward;
  for (const torch::Tensor& t : outputs) {
    if (t.defined() && t.requires_grad()) {
      backward.roots.push_back(t);
      backward.grads.push_back(torch::ones_like(t));
    }
  }
  return backward;
}

void runBackward(const BackwardRoots& backward) {
  AutocastPause pause;  // the backward's ops take the types the forward chose
  if (!backward.roots.empty()) torch::autograd::backward(backward.roots, backward.grads);
}

/// Runs the backward of the outputs alone (ones as their gradient).
void backwardOf(const Tensors& outputs) { runBackward(backwardRoots(outputs)); }

/// The edges a layer's I computes gradients for: those of its inputs that have a gradient sink
/// (stageInputs), an invalid edge for the others.
torch::autograd::edge_list gradientEdges(const Tensors& inputs) {
  torch::autograd::edge_list edges;
  for (const torch::Tensor& t : inputs) {
    edges.push_back(t.requires_grad() ? torch::autograd::impl::gradient_edge(t) : torch::autograd::Edge());
  }
  return edges;
}

/// Runs a layer's backward split in two (split_backward.h) and returns the times of I and W.
std::pair<std::chrono::nanoseconds, std::chrono::nanoseconds> timeSplitBackward(const BackwardRoots& backward,
                                                                                const Tensors& inputs,
                                                                                const torch::Device& device) {
  using Clock = std::chrono::steady_clock;
  AutocastPause pause;
  WeightBackward weights;
  const auto t0 = Clock::now();
  weights.runInputs(backward.roots, backward.grads, gradientEdges(inputs));
  synchronize(device);
  const auto t1 = Clock::now();
  weights.runWeights();
  synchronize(device);
  const auto t2 = Clock::now();
  return {t1 - t0, t2 - t1};
}

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
  explicit ProfilerSkipTracker(HandOut handOut, Precision precision = Precision::Fp32)
      : handOut_(handOut), precision_(precision) {}
  void setLayer(std::int64_t layer) { layer_ = layer; }
  void stash(const SkipKey& key, torch::Tensor tensor) override {
    stashedBytes_[{layer_, key.second}] = bytesOf(tensor);
    stashLayerOf_[key] = layer_;
    if (handOut_ != HandOut::AsStashed) {
      tensor = tensor.detach();
      if (tensor.is_floating_point() && handOut_ == HandOut::DetachedLeaf) tensor.requires_grad_(true);
      tensor = uncachedInputs({tensor}, precision_).front();
    }
    tensors_[key] = std::move(tensor);
  }
  torch::Tensor pop(const SkipKey& key) override {
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
  /// From now on keeps each popped skip, as handed out, for takeHandedOut().
  void keepHandedOut() { keepHandedOut_ = true; }
  /// The skips popped since the last call, by (stash layer, name), as handed out.
  std::vector<std::pair<std::pair<std::int64_t, std::string>, torch::Tensor>> takeHandedOut() {
    return std::exchange(handedOut_, {});
  }
  void clear() {
    tensors_.clear();
    popped_.clear();
  }
  /// After a forward with the graph kept: the bytes of each popped skip that nothing keeps
  /// alive any more (all of it, or nothing when the backward graph saved it).
  void recordUnsavedBytes() {
    for (const auto& [key, storage] : popped_) unsavedBytes_[key] = storage.expired() ? stashedBytes_[key] : 0;
  }
  /// Bytes the layer stashed under the name (or, when the name is not found, the only stash
  /// of that layer); 0 when unknown.
  Bytes stashedBytes(std::int64_t layer, const std::string& name) const { return lookup(stashedBytes_, layer, name); }
  /// The same for the part the backward graph did not save (see recordUnsavedBytes).
  Bytes unsavedBytes(std::int64_t layer, const std::string& name) const { return lookup(unsavedBytes_, layer, name); }

 private:
  using LayerAndName = std::pair<std::int64_t, std::string>;

  static Bytes lookup(const std::map<LayerAndName, Bytes>& table, std::int64_t layer, const std::string& name) {
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

/// Parameters, gradients, buffers and the training flag, restored on destruction.
class ModuleSnapshot {
 public:
  explicit ModuleSnapshot(const torch::nn::Module& module) : module_(module), training_(module.is_training()) {
    torch::NoGradGuard noGrad;
    for (const torch::Tensor& p : module.parameters()) {
      parameters_.push_back(p.detach().clone());
      grads_.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::Tensor());
    }
    for (const torch::Tensor& b : module.buffers()) buffers_.push_back(b.detach().clone());
  }
  ~ModuleSnapshot() {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> parameters = module_.parameters();
    for (std::size_t k = 0; k < parameters.size() && k < parameters_.size(); ++k) {
      parameters[k].detach().copy_(parameters_[k]);
      parameters[k].mutable_grad() = grads_[k].defined() ? grads_[k].to(parameters[k].device()) : torch::Tensor();
    }
    std::vector<torch::Tensor> buffers = module_.buffers();
    for (std::size_t k = 0; k < buffers.size() && k < buffers_.size(); ++k) buffers[k].detach().copy_(buffers_[k]);
    const_cast<torch::nn::Module&>(module_).train(training_);
  }
  ModuleSnapshot(const ModuleSnapshot&) = delete;
  ModuleSnapshot& operator=(const ModuleSnapshot&) = delete;

 private:
  const torch::nn::Module& module_;
  bool training_;
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> grads_;
  std::vector<torch::Tensor> buffers_;
};

std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "cpu";
}

/// Moves the module's parameters and buffers to `device`. Module::to leaves a gradient where it
/// was made, and a later backward could not accumulate into it from the other device; the
/// gradients are dropped instead (the caller's ModuleSnapshot restores them).
void moveDroppingGradients(torch::nn::Module& module, const torch::Device& device) {
  for (torch::Tensor& p : module.parameters()) p.mutable_grad() = torch::Tensor();
  module.to(device);
}

struct Layers {
  std::vector<torch::nn::AnyModule*> modules;
  std::vector<std::string> names;
};

Layers layersOf(torch::nn::Sequential& sequential) {
  Layers layers;
  for (auto& layer : *sequential) layers.modules.push_back(&layer);
  for (const auto& named : sequential->named_children()) layers.names.push_back(named.key());
  return layers;
}

/// Runs every layer alone, in order, on leaves of the previous layer's outputs (skips detached
/// too): `run(L, inputs)` returns layer L's outputs, which feed layer L + 1. A popped skip needs
/// no gradient here: where the skip stays inside a stage, its gradient is the one the popping
/// layer's backward hands its other input (resnet's add passes one tensor to both), and a leaf
/// requiring grad would make autograd accumulate a clone of it (an activation's size charged to
/// the pop's backward workspace that a pipeline allocates only when the skip leaves its stage,
/// which the simulator adds then).
template <typename Run>
void eachLayerAlone(const Layers& layers, const Tensors& input, ProfilerSkipTracker& skips, Run run) {
  ScopedSkipTracker scope(&skips);
  Tensors x = input;
  for (std::int64_t L = 0; L < static_cast<std::int64_t>(layers.modules.size()); ++L) {
    skips.setLayer(L);
    x = run(L, stageInputs(x, L));
  }
}

/// The same with skips handed out as detached copies that need no gradient.
template <typename Run>
void eachLayerAlone(const Layers& layers, const Tensors& input, Precision precision, Run run) {
  ProfilerSkipTracker detached(ProfilerSkipTracker::HandOut::DetachedWithoutGrad, precision);
  eachLayerAlone(layers, input, detached, run);
}

/// A layer's output tensor, watched without keeping it alive.
struct OutputStorage {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  Bytes bytes = 0;
};

/// Memory fields of every layer at one size, on `device` (the input's): on CPU with the tracked
/// allocator, on CUDA with the caching allocator's blocks on each layer's stream.
void measureMemory(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, ProfilerSkipTracker& skips,
                   const TaggedStreams& streams, const torch::Device& device, Precision precision,
                   std::vector<Bytes>& castCacheBytes, torch::Tensor& modelOutput) {
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  AutocastScope autocast(precision, device);
  // 1. Make every gradient exist (zeroed in place afterwards by the caller's snapshot), and
  // every cast copy autocast caches.
  eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
    LayerMemoryScope scope(streams, L);  // creates the layer stream's library workspaces
    Tensors out = runLayer(*layers.modules[L], in, layers.names[L]);
    backwardOf(out);
    synchronize(device);
    return out;
  });
  if (precision != Precision::Fp32) {
    std::vector<Bytes> withCache(n);
    for (std::int64_t L = 0; L < n; ++L) withCache[L] = liveBytes(L);
    clearAutocastCache();
    synchronize(device);
    castCacheBytes.assign(static_cast<std::size_t>(n), 0);
    for (std::int64_t L = 0; L < n; ++L) castCacheBytes[L] = std::max<Bytes>(0, withCache[L] - liveBytes(L));
    // The cache again, as a pipeline step holds it after its first micro-batch (with a graph:
    // autocast caches what it casts without one too).
    eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
      LayerMemoryScope scope(streams, L);
      Tensors out = runLayer(*layers.modules[L], in, layers.names[L]);
      synchronize(device);
      return out;
    });
  }
  // 2. The whole forward, each layer under its tag, graph kept.
  std::vector<Bytes> before(n);
  std::vector<std::vector<OutputStorage>> outputs(static_cast<std::size_t>(n));
  {
    ScopedSkipTracker scope(&skips);
    Tensors x = input;
    for (std::int64_t L = 0; L < n; ++L) {
      skips.setLayer(L);
      before[L] = liveBytes(L);
      resetPeakBytes(L);
      Tensors out;
      {
        LayerMemoryScope scope(streams, L);
        out = runLayer(*layers.modules[L], x, layers.names[L]);
        synchronize(device);
      }
      const Bytes live = liveBytes(L) - before[L];
      const Bytes peak = peakBytes(L) - before[L];
      costs[L].outputBytes = bytesOf(out);
      costs[L].forwardWorkspaceBytes = std::max<Bytes>(0, peak - live);
      for (const torch::Tensor& t : out) {
        if (t.defined() && t.has_storage()) outputs[L].push_back({t.storage().getWeakStorageImpl(), bytesOf(t)});
      }
      x = out;
    }
    // The model's output is the last stage's, which the pipeline hands to the loss: it counts
    // as the last layer's saved bytes only if the graph keeps it. The graph stays alive through
    // its roots while the output goes (the loss profiler gets an untagged copy).
    modelOutput = x.size() == 1 ? x.front().detach().clone() : torch::Tensor();
    std::vector<std::shared_ptr<torch::autograd::Node>> roots;
    for (const torch::Tensor& t : x) roots.push_back(t.grad_fn());
    x.clear();
    synchronize(device);
    for (std::int64_t L = 0; L < n; ++L) costs[L].savedBytes = std::max<Bytes>(0, liveBytes(L) - before[L]);
    skips.recordUnsavedBytes();  // while the roots keep the graph alive
    skips.clear();
    // What of each layer's output the graph keeps: its storage outlives every reference but the
    // graph's (the layer's own saved result, a later layer's saved input, or what it is a view of).
    for (std::int64_t L = 0; L < n; ++L) {
      Bytes kept = 0;
      for (const OutputStorage& output : outputs[L]) kept += output.storage.expired() ? 0 : output.bytes;
      costs[L].outputSavedBytes = std::min(kept, costs[L].outputBytes);
    }
  }
  // 3. Each layer's backward under its tag.
  eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
    Tensors out;
    Bytes start = 0;
    {
      // The forward under the tag too, so what the backward frees of it counts against its peak.
      LayerMemoryScope scope(streams, L);
      out = runLayer(*layers.modules[L], in, layers.names[L]);
      start = liveBytes(L);
      resetPeakBytes(L);
      backwardOf(out);
      synchronize(device);
    }
    costs[L].backwardWorkspaceBytes = std::max<Bytes>(0, peakBytes(L) - start);
    return out;
  });
  // 4. Each layer's backward split in two: what I keeps for W is what W frees. The layer gets
  // a copy of its input made under its tag and held by nothing else, so an input its weights'
  // gradient needs (a Linear's) counts: in a stage it is the previous layer's output (saved
  // bytes freed by I) or the activation received (freed by I). The model's own input needs no
  // gradient and is no stage's allocation: it is not copied.
  eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
    LayerMemoryScope scope(streams, L);
    Tensors out;
    torch::autograd::edge_list inputEdges;
    {
      Tensors own;
      for (const torch::Tensor& t : in) own.push_back(L > 0 ? stageInputOf(t.detach().clone(), true).tensor : t);
      inputEdges = gradientEdges(own);
      out = runLayer(*layers.modules[L], own, layers.names[L]);
    }
    synchronize(device);
    const Bytes beforeInputs = liveBytes(L);
    resetPeakBytes(L);
    WeightBackward weights;
    {
      const BackwardRoots backward = backwardRoots(out);
      AutocastPause pause;
      weights.runInputs(backward.roots, backward.grads, inputEdges);
    }
    inputEdges.clear();
    for (torch::Tensor& t : out) t = t.detach();  // the graph goes with I's roots; the output stays
    synchronize(device);
    const Bytes inputPeak = peakBytes(L);
    const Bytes afterInputs = liveBytes(L);
    const Bytes kept = weights.keptGradientBytes();
    resetPeakBytes(L);
    {
      AutocastPause pause;
      weights.runWeights();
    }
    synchronize(device);
    BackwardSplit& split = costs[L].backwardSplit.emplace(BackwardSplit{
        0, 0, std::max<Bytes>(0, afterInputs - liveBytes(L)), std::max<Bytes>(0, peakBytes(L) - afterInputs)});
    split.inputWorkspaceBytes = std::max<Bytes>(0, inputPeak - beforeInputs);
    split.inputKeptBytes = kept;
    return out;
  });
}

/// Which backward a probe runs: I as a stage runs it (split_backward.h: a slice gets storage of
/// its own), or a whole backward, which leaves the skip's gradient in its leaf.
enum class ProbedBackward { Input, Whole };

/// What the popping layer's backward hands a skip, per skip (stash layer, name).
struct SkipGradientFacts {
  /// The very tensor it hands its input (SkipProfile::gradientSharedWithInput for I,
  /// gradientSharedInBackward for a whole backward).
  bool sharedWithInput = false;
  /// I only: a slice of the gradient of the layer's output (SkipProfile::gradientSliceOfOutput),
  /// as the engine hands it back before I gives it storage of its own.
  bool sliceOfOutput = false;
};

/// Whether `a` and `b` are both defined and their data starts in one storage.
bool shareStorage(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.has_storage() && b.has_storage() && a.storage().data() == b.storage().data();
}

/// Each popping layer runs alone on stage inputs and skips handed out as a stage hands them out
/// (a leaf, or under autocast a view of one), and the gradients are compared by storage.
std::map<std::pair<std::int64_t, std::string>, SkipGradientFacts> skipGradientFacts(const Layers& layers,
                                                                                    const Tensors& input,
                                                                                    Precision precision,
                                                                                    ProbedBackward probed) {
  std::map<std::pair<std::int64_t, std::string>, SkipGradientFacts> facts;
  ProfilerSkipTracker leaves(ProfilerSkipTracker::HandOut::DetachedLeaf, precision);
  leaves.keepHandedOut();
  AutocastScope autocast(precision, input.empty() ? torch::Device(torch::kCPU) : input.front().device());
  eachLayerAlone(layers, input, leaves, [&](std::int64_t L, const Tensors& in) {
    Tensors out = runLayer(*layers.modules[L], in, layers.names[L]);
    for (const auto& [key, skip] : leaves.takeHandedOut()) {
      SkipGradientFacts& fact = facts[key];
      if (in.size() != 1 || !in.front().requires_grad() || !skip.requires_grad()) continue;
      const BackwardRoots backward = backwardRoots(out);
      if (probed == ProbedBackward::Whole) {
        runBackward(backward);
        const torch::Tensor skipGrad = skip.is_view() ? torch::Tensor(skip._base()).grad() : skip.grad();
        fact.sharedWithInput = shareStorage(sinkGradientOf(in.front()), skipGrad);
        continue;
      }
      AutocastPause pause;
      // The engine's own gradient first (runInputs copies a slice into storage of its own).
      const Tensors raw = torch::autograd::grad(backward.roots, {skip}, backward.grads, /*retain_graph=*/true,
                                                /*create_graph=*/false, /*allow_unused=*/true);
      fact.sliceOfOutput = std::any_of(backward.grads.begin(), backward.grads.end(), [&](const torch::Tensor& g) {
        return shareStorage(g, raw.front()) && raw.front().numel() < g.numel();  // (an add's is all of it)
      });
      WeightBackward weights;
      const Tensors grads =
          weights.runInputs(backward.roots, backward.grads, {gradientEdges(in).front(), gradientEdges({skip}).front()});
      fact.sharedWithInput = shareStorage(grads[0], grads[1]);
    }
    for (torch::Tensor& t : out) t = t.detach();
    return out;
  });
  return facts;
}

/// Median forward and backward time of every layer at one size, the backward whole and split.
void measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                  const LayerProfilerOptions& options, double budgetSeconds) {
  using Clock = std::chrono::steady_clock;
  AutocastScope autocast(options.precision, device);
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  std::vector<std::vector<TimeNs>> forwardNs(n), backwardNs(n);
  std::vector<std::vector<TimeNs>> forwardLaunchNs(n), backwardLaunchNs(n);  // CUDA: before the synchronize
  auto ns = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); };
  ProfilerSkipTracker detached(ProfilerSkipTracker::HandOut::DetachedLeaf, options.precision);
  ScopedSkipTracker scope(&detached);
  std::vector<std::vector<TimeNs>> inputNs(n), weightNs(n);  // the backward split into I and W
  // Every other pass runs the backward split (its forward is not recorded twice).
  auto pass = [&](bool record, bool split) {
    Tensors x = input;
    for (std::int64_t L = 0; L < n; ++L) {
      detached.setLayer(L);
      Tensors in = stageInputs(x, L);
      synchronize(device);
      const auto t0 = Clock::now();
      Tensors out = runLayer(*layers.modules[L], in, layers.names[L]);
      const auto forwardLaunched = Clock::now();
      synchronize(device);
      const auto t1 = Clock::now();
      // The output gradient is made outside the clock: inside a pipeline it arrives from the
      // next layer, and filling it here took longer than some layers' backward (unet's first
      // stash, an identity with a 4 MiB output, read 736 us instead of 39 us).
      const BackwardRoots backward = backwardRoots(out);
      synchronize(device);
      if (record) {
        forwardNs[L].push_back(ns(t1 - t0));
        forwardLaunchNs[L].push_back(ns(forwardLaunched - t0));
      }
      if (split) {  // this pass times the backward as I then W
        const auto [inputTime, weightTime] = timeSplitBackward(backward, in, device);
        if (record) {
          inputNs[L].push_back(inputTime.count());
          weightNs[L].push_back(weightTime.count());
        }
        x = out;
        continue;
      }
      const auto t2 = Clock::now();
      runBackward(backward);  // returns once autograd's device thread has launched it all
      const auto backwardLaunched = Clock::now();
      synchronize(device);
      const auto t3 = Clock::now();
      if (record) {
        backwardNs[L].push_back(ns(t3 - t2));
        backwardLaunchNs[L].push_back(ns(backwardLaunched - t2));
      }
      x = out;
    }
    detached.clear();
  };
  for (std::int64_t r = 0; r < options.warmupRuns; ++r) pass(false, r % 2 == 1);
  const auto start = Clock::now();
  const auto budget = std::chrono::duration<double>(budgetSeconds);
  const std::int64_t cap = 2 * std::max(options.minRuns, kMaxRuns);
  for (std::int64_t r = 0; r < cap; ++r) {
    if (r >= 2 * options.minRuns && Clock::now() - start >= budget) break;
    pass(true, r % 2 == 1);
  }
  for (std::int64_t L = 0; L < n; ++L) {
    costs[L].forwardNs = medianNs(forwardNs[L]);
    costs[L].backwardNs = medianNs(backwardNs[L]);
    BackwardSplit& split = costs[L].backwardSplit.emplace(costs[L].backwardSplit.value_or(BackwardSplit{}));
    split.inputNs = medianNs(inputNs[L]);
    split.weightNs = medianNs(weightNs[L]);
    if (device.is_cuda()) {
      costs[L].forwardLaunch = LaunchCost{medianNs(forwardLaunchNs[L]), 0, 0};
      costs[L].backwardLaunch = LaunchCost{medianNs(backwardLaunchNs[L]), 0, 0};
    }
  }
}

/// The kernels a run launched on the device, counted and their durations summed, captured alone
/// by `collector`; nullopt when the collector cannot record.
template <typename Run>
std::optional<LaunchCost> capturedKernels(CuptiCollector& collector, const torch::Device& device, Run run) {
  synchronize(device);
  if (!collector.start()) return std::nullopt;
  run();
  collector.stop();  // synchronises the device and flushes every record
  LaunchCost kernels;
  for (const TraceEvent& event : collector.trace(Trace{}).events) {
    if (event.kind != EventKind::Span || event.phase != Phase::Kernel) continue;
    kernels.deviceNs += event.durationNs;
    ++kernels.kernels;
  }
  return kernels;
}

/// CUDA: every layer's forward and backward kernels at one size (one pass, each captured alone
/// by the cheap CUPTI mode) into costs[L].forwardLaunch / backwardLaunch, whose host times
/// measureTimes filled. Returns false, leaving them incomplete, when CUPTI cannot record.
bool measureKernels(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                    CuptiCollector& collector, Precision precision) {
  AutocastScope autocast(precision, device);
  ProfilerSkipTracker detached(ProfilerSkipTracker::HandOut::DetachedLeaf, precision);
  ScopedSkipTracker scope(&detached);
  Tensors x = input;
  for (std::size_t L = 0; L < layers.modules.size(); ++L) {
    detached.setLayer(static_cast<std::int64_t>(L));
    Tensors in = stageInputs(x, static_cast<std::int64_t>(L));
    Tensors out;
    const std::optional<LaunchCost> forward =
        capturedKernels(collector, device, [&] { out = runLayer(*layers.modules[L], in, layers.names[L]); });
    if (!forward) return false;
    const BackwardRoots backward = backwardRoots(out);
    const std::optional<LaunchCost> back = capturedKernels(collector, device, [&] { runBackward(backward); });
    if (!back || !costs[L].forwardLaunch || !costs[L].backwardLaunch) return false;
    costs[L].forwardLaunch->deviceNs = forward->deviceNs;
    costs[L].forwardLaunch->kernels = forward->kernels;
    costs[L].backwardLaunch->deviceNs = back->deviceNs;
    costs[L].backwardLaunch->kernels = back->kernels;
    x = out;
  }
  detached.clear();
  return true;
}

/// One optimizer stepping `trainable` alone on `device` (their gradients zeros): its first step
/// creates its state (optimizerStateCopies x the gradients), then the median time of `runs`
/// further steps and their transient peak above the state under tag L.
OptimizerStepCost measureOptimizerStep(const OptimizerSpec& spec, const std::vector<torch::Tensor>& trainable,
                                       std::int64_t runs, const TaggedStreams& streams, std::int64_t L,
                                       const torch::Device& device) {
  using Clock = std::chrono::steady_clock;
  const std::unique_ptr<torch::optim::Optimizer> optimizer = makeOptimizer(spec, trainable);
  {
    LayerMemoryScope scope(streams, L);
    optimizer->step();  // creates the state
    synchronize(device);
  }
  std::vector<TimeNs> times;
  Bytes transient = 0;
  for (std::int64_t r = 0; r < runs; ++r) {
    LayerMemoryScope scope(streams, L);
    const Bytes start = liveBytes(L);
    resetPeakBytes(L);
    const auto t0 = Clock::now();
    optimizer->step();
    synchronize(device);
    times.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    transient = std::max(transient, peakBytes(L) - start);
  }
  return {medianNs(times), transient};
}

/// Per layer with trainable parameters, every optimizer kind stepping them alone (the profile's
/// hyperparameters where they apply; measureOptimizerStep): optimizerSteps, and the profile's
/// own kind's as optimizer_step_ns and optimizer_step_bytes, with its state as optimizer_bytes.
/// The caller's snapshot restores the parameters.
void measureOptimizer(torch::nn::Sequential& sequential, Profile& profile, const LayerProfilerOptions& options,
                      const TaggedStreams& streams, const torch::Device& device) {
  const Bytes copies = optimizerStateCopies(options.optimizer.kind);
  for (std::int64_t L = 0; L < profile.layerCount(); ++L) {
    LayerProfile& layer = profile.layers[static_cast<std::size_t>(L)];
    layer.optimizerBytes = copies * layer.gradBytes;
    std::vector<torch::Tensor> trainable;
    for (const torch::Tensor& p : sequential->ptr(L)->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    if (trainable.empty()) continue;
    for (torch::Tensor& p : trainable) p.mutable_grad() = torch::zeros_like(p);
    for (OptimizerKind kind : kOptimizerKinds) {
      layer.optimizerSteps[kind] =
          measureOptimizerStep(options.optimizer.asKind(kind), trainable, options.minRuns, streams, L, device);
    }
    const OptimizerStepCost own = layer.optimizerSteps[options.optimizer.kind];
    layer.optimizerStepNs = own.ns;
    layer.optimizerStepBytes = own.bytes;
    for (torch::Tensor& p : trainable) p.mutable_grad() = torch::Tensor();
  }
}

}  // namespace

Profile profileModel(Model& model, const LayerProfilerOptions& options) {
  std::set<std::int64_t> sizes;
  for (std::int64_t b : options.microBatches) {
    if (b <= 0) throw std::invalid_argument("micro-batch sizes must be positive, got " + std::to_string(b));
    sizes.insert(b);
  }
  if (sizes.empty()) throw std::invalid_argument("the layer profiler needs at least one micro-batch size");
  if (options.minRuns <= 0 || options.warmupRuns < 0 || options.timeBudgetSeconds < 0) {
    throw std::invalid_argument("layer profiler options: minRuns must be positive and warm-up runs and the time "
                                "budget non-negative (got minRuns " +
                                std::to_string(options.minRuns) + ")");
  }
  if (!model.sequential || model.sequential->size() == 0) {
    throw std::invalid_argument("model '" + model.name + "' has no layers to profile");
  }
  validatePrecision(options.precision, options.device);
  validateOptimizer(options.optimizer);
  installMemoryTracker();

  torch::nn::Sequential& sequential = model.sequential;
  const std::vector<torch::Tensor> parameters = sequential->parameters();
  const torch::Device home = parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device();
  Layers layers = layersOf(sequential);
  const auto n = static_cast<std::int64_t>(layers.modules.size());

  Profile profile;
  profile.environment.model = model.name;
  profile.environment.deviceType = options.device.is_cuda() ? "cuda" : "cpu";
  profile.environment.deviceName = options.device.is_cuda() ? options.device.str() : cpuName();
  profile.environment.threads = torch::get_num_threads();
  profile.environment.torchVersion = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                                     "." + std::to_string(TORCH_VERSION_PATCH);
  profile.environment.precision = options.precision;
  profile.environment.optimizer = options.optimizer;
  // Memory is measured on the target device (on CUDA the caching allocator's blocks): CPU and
  // CUDA keep different tensors for backward (dropout keeps a mask on CUDA, its noise on CPU).
  const bool cuda = options.device.is_cuda();
  const torch::Device memoryDevice = cuda ? options.device : torch::Device(torch::kCPU);
  // On CUDA a parameter, and its gradient, is one block of the caching allocator.
  auto parameterBytes = [&](const torch::Tensor& p) { return cuda ? roundToAllocatorBlock(bytesOf(p)) : bytesOf(p); };
  profile.layers.resize(static_cast<std::size_t>(n));
  for (std::int64_t L = 0; L < n; ++L) {
    LayerProfile& layer = profile.layers[L];
    layer.name = layers.names[L];
    for (const torch::Tensor& p : sequential->ptr(L)->parameters()) {
      layer.paramBytes += parameterBytes(p);
      if (p.requires_grad()) layer.gradBytes += parameterBytes(p);
    }
  }
  for (const SharedParameterUse& use : findSharedParameters(sequential)) {
    profile.sharedParameters.push_back({use.name, use.layers, parameterBytes(use.tensor)});
  }
  profile.libraryWorkspaceBytes = measureLibraryWorkspaceBytes(options.device);  // 0 on CPU
  // CUDA: the kernels of each pass, for the simulator's launch model; without CUPTI (no driver
  // or permission, a build without it) the profile carries no launch data at all.
  HostTracer kernelClock;
  const std::unique_ptr<CuptiCollector> kernelCollector =
      options.device.is_cuda() ? CuptiCollector::create(kernelClock, CuptiMode::Cheap) : nullptr;
  bool launchData = kernelCollector && kernelCollector->available();

  ProfilerSkipTracker skips(ProfilerSkipTracker::HandOut::AsStashed);
  {
    ModuleSnapshot snapshot(*sequential);  // restores parameters, grads, buffers, mode
    // CUDA: one stream per layer and one for the loss (tag n); frees their workspaces last.
    const TaggedStreams streams(memoryDevice, n + 1);
    sequential->train();
    const double budgetPerSize = options.timeBudgetSeconds / static_cast<double>(sizes.size());
    for (std::int64_t b : sizes) {
      const Batch batch = model.makeBatch(b, /*seed=*/0);
      std::vector<CostSample> costs(static_cast<std::size_t>(n));
      for (CostSample& c : costs) c.microBatch = b;
      // Memory on the target device: its allocator (tracked on CPU, the caching one on CUDA).
      moveDroppingGradients(*sequential, memoryDevice);
      std::vector<Bytes> castCacheBytes;
      torch::Tensor output;
      measureMemory(layers, {batch.input.to(memoryDevice)}, costs, skips, streams, memoryDevice, options.precision,
                    castCacheBytes, output);
      const auto inputGradients =
          skipGradientFacts(layers, {batch.input.to(memoryDevice)}, options.precision, ProbedBackward::Input);
      const auto wholeGradients =
          skipGradientFacts(layers, {batch.input.to(memoryDevice)}, options.precision, ProbedBackward::Whole);
      if (model.loss && output.defined()) {
        const LossMeasurement how{memoryDevice, options.precision, &streams, n, options.warmupRuns, options.minRuns};
        const LossSample loss = measureLoss(model, output, batch.target.to(memoryDevice), how);
        profile.loss.costs.push_back(loss.cost);
        profile.loss.keepsOutput = loss.keepsOutput;  // the largest size's
      }
      // The cast copies are of the weights: the same at every size (the largest size's kept).
      for (std::size_t L = 0; L < castCacheBytes.size(); ++L) profile.layers[L].castCacheBytes = castCacheBytes[L];
      // Times on the target device.
      moveDroppingGradients(*sequential, options.device);
      const Tensors input{batch.input.to(options.device)};
      measureTimes(layers, input, costs, options.device, options, budgetPerSize);
      if (launchData) {
        launchData = measureKernels(layers, input, costs, options.device, *kernelCollector, options.precision);
      }
      for (std::int64_t L = 0; L < n; ++L) profile.layers[L].costs.push_back(costs[L]);
      profile.inputBytesPerSample = bytesOf(batch.input) / b;
      for (const SkipRoute& route : model.skips) {
        const Bytes bytes = skips.stashedBytes(route.stashLayer, route.name);
        const Bytes unsaved = skips.unsavedBytes(route.stashLayer, route.name);
        auto it = std::find_if(profile.skips.begin(), profile.skips.end(), [&](const SkipProfile& s) {
          return s.name == route.name && s.stashLayer == route.stashLayer;
        });
        if (it == profile.skips.end()) {
          profile.skips.push_back(SkipProfile{route.name, route.stashLayer, route.popLayer, 0, 0});
          it = std::prev(profile.skips.end());
        }
        it->bytesPerSample = bytes / b;  // the largest size (last) wins: least rounding
        it->unsavedBytesPerSample = unsaved / b;
        const auto inI = inputGradients.find({route.stashLayer, route.name});
        const auto inB = wholeGradients.find({route.stashLayer, route.name});
        it->gradientSharedWithInput = inI != inputGradients.end() && inI->second.sharedWithInput;
        it->gradientSliceOfOutput = inI != inputGradients.end() && inI->second.sliceOfOutput;
        it->gradientSharedInBackward = inB != wholeGradients.end() && inB->second.sharedWithInput;
      }
    }
    // The optimizer on the target device, once: its costs do not depend on the batch.
    moveDroppingGradients(*sequential, memoryDevice);
    measureOptimizer(sequential, profile, options, streams, memoryDevice);
    moveDroppingGradients(*sequential, home);
  }
  if (!launchData) {  // on every sample or on none
    for (LayerProfile& layer : profile.layers) {
      for (CostSample& cost : layer.costs) {
        cost.forwardLaunch.reset();
        cost.backwardLaunch.reset();
      }
    }
  }
  return profile;
}

}  // namespace pipeprof
