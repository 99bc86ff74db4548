// The layer profiler's memory pass (layer_memory_profiler.h).
#include "layer_profiling/layer_memory_profiler.h"

#include "layer_profiling/profiling_scopes.h"
#include "stage/autocast.h"
#include "stage/graph_walk.h"
#include "stage/split_backward.h"
#include "stage/stage_input.h"

#include <pipeprof/runtime/memory_tracker.h>

#include <ATen/SequenceNumber.h>

#include <algorithm>
#include <cstdint>
#include <memory>

namespace pipeprof::layer_profiling {

namespace {

/// A layer's output tensor, watched without keeping it alive.
struct OutputStorage {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  Bytes bytes = 0;
};

/// The memory passes at one size, over the layers, their input, where the costs go, the
/// layers' streams, the device and the precision.
struct MemoryPass {
  Layers& layers;
  const Tensors& input;
  std::vector<CostSample>& costs;
  const TaggedStreams& streams;
  const torch::Device& device;
  Precision precision;
  TimeSamples* times;  ///< passes 3 and 4 timed into it, when given

  void makeGradientsAndCastCopies(std::vector<Bytes>& castCacheBytes) const;
  void measureForward(ProfilerSkipTracker& skips, torch::Tensor& modelOutput) const;
  void measureBackward() const;
  void measureInnerBackward() const;
  void measureSplitBackward() const;
};

/// What of each layer's saved bytes the next layer's backward lets go (savedFreedByNextBytes):
/// walks the kept graph from `roots`, sorts its nodes into layers by the sequence number each
/// got as the forward made it (`firstSequence[L]`: the first of layer L's; `endSequence`: the
/// first after the forward's, a leaf's AccumulateGrad, which saves nothing), then lets go of
/// every layer's saved tensors, last layer first as a backward does, counting what each layer's
/// release frees of the layer before's. The graph is of no use afterwards.
void measureFreedByNext(const std::vector<std::shared_ptr<torch::autograd::Node>>& roots,
                        const std::vector<std::uint64_t>& firstSequence, std::uint64_t endSequence,
                        std::vector<CostSample>& costs) {
  const auto n = static_cast<std::int64_t>(firstSequence.size());
  if (n == 0) return;
  torch::autograd::edge_list edges;
  for (const auto& root : roots) {
    if (root) edges.emplace_back(root, 0);
  }
  const Reachability walk = reachingNodes(edges, {});
  std::vector<std::vector<torch::autograd::Node*>> nodesOf(static_cast<std::size_t>(n));
  for (torch::autograd::Node* node : walk.order) {
    if (node->sequence_nr() >= endSequence) continue;
    const auto layer =
        std::upper_bound(firstSequence.begin(), firstSequence.end(), node->sequence_nr()) - firstSequence.begin() - 1;
    if (layer >= 0) nodesOf[static_cast<std::size_t>(layer)].push_back(node);
  }
  for (std::int64_t L = n - 1; L >= 0; --L) {
    const Bytes before = L > 0 ? liveBytes(L - 1) : 0;
    for (torch::autograd::Node* node : nodesOf[static_cast<std::size_t>(L)]) node->release_variables();
    if (L > 0) costs[L - 1].savedFreedByNextBytes = std::max<Bytes>(0, before - liveBytes(L - 1));
  }
  costs[n - 1].savedFreedByNextBytes = 0;  // no layer after it: the loss, or the next stage's
}

/// How far the latest allocation under tag L (a backward's last: the gradient of the layer's
/// input) lifted its peak window's peak.
Bytes endRise(std::int64_t L) { return std::max<Bytes>(0, peakBytes(L) - peakBytesBeforeLastAllocation(L)); }

/// Whether every trainable parameter of the layers has a gradient (an earlier size's passes made
/// them: the profiler keeps them from size to size on one device).
bool everyGradientExists(const Layers& layers) {
  for (std::size_t L = 0; L < layers.modules.size(); ++L) {
    if (!layers.runs(static_cast<std::int64_t>(L))) continue;  // no pass makes its gradients
    for (const torch::Tensor& p : layers.modules[L]->ptr()->parameters()) {
      if (p.requires_grad() && !p.grad().defined()) return false;
    }
  }
  return true;
}

/// Pass 1: makes every gradient exist (zeroed in place afterwards by the caller's snapshot),
/// and every cast copy autocast caches; under bf16/fp16 `castCacheBytes` gets each layer's. On
/// CPU in fp32, where every gradient exists already, it has nothing to make and does not run
/// (on CUDA it also makes each layer stream's library workspaces).
void MemoryPass::makeGradientsAndCastCopies(std::vector<Bytes>& castCacheBytes) const {
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  if (precision == Precision::Fp32 && !device.is_cuda() && everyGradientExists(layers)) return;
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
}

/// Pass 2: the whole forward, each layer under its tag, graph kept: outputs, saved bytes,
/// forward workspaces and what `skips` hold; `modelOutput` gets the loss profiler's copy.
void MemoryPass::measureForward(ProfilerSkipTracker& skips, torch::Tensor& modelOutput) const {
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  std::vector<Bytes> before(n);
  std::vector<std::vector<OutputStorage>> outputs(static_cast<std::size_t>(n));
  {
    ScopedSkipTracker scope(&skips);
    Tensors x = input;
    std::vector<std::uint64_t> firstSequence(static_cast<std::size_t>(n));
    for (std::int64_t L = 0; L < n; ++L) {
      skips.setLayer(L);
      firstSequence[static_cast<std::size_t>(L)] = at::sequence_number::peek();
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
    const std::uint64_t endSequence = at::sequence_number::peek();
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
    measureFreedByNext(roots, firstSequence, endSequence, costs);
  }
}

/// Pass 3: each layer's backward under its tag: its workspace as a stage's last layer runs it,
/// its output and the gradient of it held throughout. Timed as a timed pass runs it, outside the
/// figures it measures; the loss is not (no optimizer's step came before it: timeLoss).
void MemoryPass::measureBackward() const {
  const DeviceClock clock(device);
  const auto runStart = clock.finished();
  eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
    Tensors out;
    Bytes start = 0;
    {
      // The forward under the tag too, so what the backward frees of it counts against its peak.
      LayerMemoryScope scope(streams, L);
      const TimedRun forward = clock.time([&] { out = runLayer(*layers.modules[L], in, layers.names[L]); });
      const bool timed = times != nullptr && !times->popsASkip[L];
      start = liveBytes(L);
      resetPeakBytes(L);
      const BackwardRoots backward = backwardRoots(out);  // its gradients count against the peak
      const TimedRun backwardRun = clock.time([&] { runBackward(backward); });
      if (times != nullptr) times->addForward(L, forward);  // a popping layer's forward is a timed pass's too
      if (timed) times->addBackward(L, backwardRun);
    }
    costs[L].backwardWorkspaceBytes = std::max<Bytes>(0, peakBytes(L) - start);
    costs[L].backwardEndRiseBytes = endRise(L);
    return out;
  });
  if (times != nullptr) times->wholeRun = clock.finished() - runStart;
}

/// Pass 3b: the same as a layer inside a stage runs it: the output's gradient made by the
/// backward and let go once used, the output held by nothing but the graph (onesGradientRoots).
void MemoryPass::measureInnerBackward() const {
  eachLayerAlone(layers, input, precision, [&](std::int64_t L, const Tensors& in) {
    Tensors out;
    Bytes start = 0;
    {
      LayerMemoryScope scope(streams, L);
      Tensors roots;
      {
        const Tensors made = runLayer(*layers.modules[L], in, layers.names[L]);
        roots = onesGradientRoots(made);
        // The next layer's input, a copy: the output itself is the graph's alone.
        for (const torch::Tensor& t : made) out.push_back(t.defined() ? copyOutsideTheTags(t.detach()) : t);
      }
      synchronize(device);
      start = liveBytes(L);
      resetPeakBytes(L);
      runFromOnesGradientRoots(std::move(roots));
      synchronize(device);
    }
    costs[L].innerBackwardWorkspaceBytes = std::max<Bytes>(0, peakBytes(L) - start);
    return out;
  });
}

/// Pass 4: each layer's backward split in two: what I keeps for W is what W frees. The layer gets
/// a copy of its input made under its tag and held by nothing else, so an input its weights'
/// gradient needs (a Linear's) counts: in a stage it is the previous layer's output (saved
/// bytes freed by I) or the activation received (freed by I). The model's own input needs no
/// gradient and is no stage's allocation: it is not copied.
void MemoryPass::measureSplitBackward() const {
  const DeviceClock clock(device);
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
    DeviceClock::Clock::duration inputTime{}, weightTime{};
    {
      const BackwardRoots backward = backwardRoots(out);
      AutocastPause pause;
      const auto t0 = clock.finished();
      weights.runInputs(backward.roots, backward.grads, inputEdges);
      inputTime = clock.finished() - t0;
    }
    inputEdges.clear();
    for (torch::Tensor& t : out) t = t.detach();  // the graph goes with I's roots; the output stays
    synchronize(device);
    const Bytes inputPeak = peakBytes(L);
    costs[L].inputEndRiseBytes = endRise(L);
    const Bytes afterInputs = liveBytes(L);
    const Bytes kept = weights.keptGradientBytes();
    resetPeakBytes(L);
    {
      AutocastPause pause;
      const auto t0 = clock.finished();
      weights.runWeights();
      weightTime = clock.finished() - t0;
    }
    if (times != nullptr && !times->popsASkip[L]) {
      times->inputNs[L].push_back(DeviceClock::ns(inputTime));
      times->weightNs[L].push_back(DeviceClock::ns(weightTime));
    }
    BackwardSplit& split = costs[L].backwardSplit.emplace(BackwardSplit{
        0, 0, std::max<Bytes>(0, afterInputs - liveBytes(L)), std::max<Bytes>(0, peakBytes(L) - afterInputs)});
    split.inputWorkspaceBytes = std::max<Bytes>(0, inputPeak - beforeInputs);
    split.inputKeptBytes = kept;
    return out;
  });
}

}  // namespace

void measureMemory(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, ProfilerSkipTracker& skips,
                   const TaggedStreams& streams, const torch::Device& device, Precision precision,
                   std::vector<Bytes>& castCacheBytes, torch::Tensor& modelOutput, TimeSamples* times) {
  AutocastScope autocast(precision, device);
  const MemoryPass pass{layers, input, costs, streams, device, precision, times};
  pass.makeGradientsAndCastCopies(castCacheBytes);
  pass.measureForward(skips, modelOutput);
  pass.measureBackward();
  pass.measureInnerBackward();
  pass.measureSplitBackward();
}

}  // namespace pipeprof::layer_profiling
