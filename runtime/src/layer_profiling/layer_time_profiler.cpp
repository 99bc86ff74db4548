// The layer profiler's timed passes (layer_time_profiler.h).
#include "layer_profiling/layer_time_profiler.h"

#include "layer_profiling/loss_profiler.h"
#include "layer_profiling/profiling_scopes.h"
#include "layer_profiling/step_boundary.h"
#include "stage/autocast.h"
#include "stage/split_backward.h"

#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

namespace pipeprof::layer_profiling {

namespace {

constexpr std::int64_t kMaxRuns = 50;

/// How long the loss pass's device idles before its forwards: the wait of a pipeline's last stage
/// for its first micro-batch of a step, 0.9-3.6 ms at the median in the mlp's references on two
/// CPU devices (docs/profiler.md, "After the last stage's wait").
constexpr std::chrono::microseconds kLastStageWait{2000};

/// What a timed pass holds of a layer from its forward to its backward.
struct PendingBackward {
  std::int64_t layer = 0;
  Tensors inputs;   ///< stageInputs: where I's gradients go
  Tensors outputs;  ///< the backward's roots
};

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

/// A forward-only pass without a graph, as a checkpointed micro-batch's forward runs in a stage
/// (stage_core.cpp): every layer in order, no tensor saved, under autocast no cast cached; each
/// layer's time into samples.forwardNoGradNs where `record`. A pass of its own, since running a
/// layer twice within a timed pass would pop its skip twice.
void forwardPassWithoutGraph(Layers& layers, const Tensors& input, const DeviceClock& clock, ProfilerSkipTracker& skips,
                             TimeSamples& samples, bool record) {
  torch::NoGradGuard noGrad;
  AutocastCacheOff cacheOff;
  eachLayerAlone(layers, input, skips, [&](std::int64_t L, const Tensors& in) {
    Tensors out;
    const TimedRun forward = clock.time([&] { out = runLayer(*layers.modules[L], in, layers.names[L]); });
    if (record) samples.forwardNoGradNs[static_cast<std::size_t>(L)].push_back(forward.ns);
    return out;
  });
  skips.clear();
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> stageWindows(const std::vector<CostSample>& costs,
                                                                Bytes limitBytes) {
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;
  Bytes held = 0;
  for (std::size_t L = 0; L < costs.size(); ++L) {
    const Bytes bytes = costs[L].outputBytes + costs[L].savedBytes;
    if (windows.empty() || (held > 0 && held + bytes > limitBytes)) {
      windows.emplace_back(static_cast<std::int64_t>(L), static_cast<std::int64_t>(L));
      held = 0;
    }
    windows.back().second = static_cast<std::int64_t>(L) + 1;
    held += bytes;
  }
  return windows;
}

namespace {

/// The timed passes over one model at one size, and the time they may take. A pass runs the
/// layers as a stage does (docs/profiler.md, "In a stage's order"): window by window, every
/// layer's forward in order, then the backwards of the layers it times in reverse, whole or split
/// -- each window's I's, then its W's -- between a step's beginning and end (StepBoundary). Those
/// layers are timed (a split pass's forwards are not recorded twice); the others' outputs only
/// feed the next. A backward's output gradient is made just before it, outside the clock: inside a
/// stage the next layer's backward has just written it (filled long before, unet's first stash,
/// an identity with a 4 MiB output, read 736 us instead of 39 us).
class TimedPasses {
 public:
  using Clock = DeviceClock::Clock;

  TimedPasses(Layers& layers, const Tensors& input, const std::vector<CostSample>& costs, const torch::Device& device,
              const LayerProfilerOptions& options, double seconds, TimeSamples& samples, LossTiming* loss)
      : layers_(layers),
        input_(input),
        clock_(device),
        autocast_(options.precision, device),
        device_(device),
        precision_(options.precision),
        detached_(ProfilerSkipTracker::HandOut::DetachedLeaf, options.precision),
        scope_(&detached_),
        samples_(samples),
        loss_(loss),
        windows_(stageWindows(costs)),
        step_(layers, options.optimizer, device),
        everyLayer_(layers.modules.size()),
        deadline_(Clock::now() +
                  std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)))),
        lastPass_(samples.wholeRun) {
    for (std::size_t L = 0; L < everyLayer_.size(); ++L) everyLayer_[L] = layers.runs(static_cast<std::int64_t>(L));
  }

  /// A pass timing the layers `timedLayers` marks, the backward whole or split, recorded into the
  /// samples where `record`. A pass of every layer sets how long the next is expected to take.
  void run(bool record, bool split, const std::vector<bool>& timedLayers) {
    const auto t0 = Clock::now();
    step_.begin();
    Tensors x = input_;
    for (const auto& [begin, end] : windows_) {
      std::vector<PendingBackward> pending;
      for (std::int64_t L = begin; L < end; ++L) {
        if (!layers_.runs(L)) continue;  // its input, of its output's shape, feeds the next
        x = runForward(L, x, record, split, timedLayers[static_cast<std::size_t>(L)], pending);
      }
      timeBackwards(pending, record, split);
    }
    detached_.clear();
    step_.end();
    if (timedLayers == everyLayer_) lastPass_ = Clock::now() - t0;
  }
  void runEveryLayer(bool record, bool split) { run(record, split, everyLayer_); }

  /// A forward-only pass without a graph (forwardPassWithoutGraph).
  void runWithoutGraph(bool record) { forwardPassWithoutGraph(layers_, input_, clock_, detached_, samples_, record); }

  /// The loss pass: a step's first loss call as a pipeline's last stage makes it. After the
  /// optimizer's step the stage's device idles while the stages before it compute the first
  /// micro-batch, then runs its layers' forwards and the loss, whose code and state the idle left
  /// cold and the forwards brought partly back (docs/profiler.md, "After the last stage's wait").
  /// Between a step's beginning and end, the device idle for kLastStageWait, every layer's
  /// forward without a graph but the last one's, untimed, then the loss, timed and recorded
  /// where `record`. The layers' passes time no loss: an idle before them would slow the
  /// forwards they time after it.
  void runLoss(bool record) {
    step_.begin();
    std::this_thread::sleep_for(kLastStageWait);
    {
      torch::NoGradGuard noGrad;
      const auto last = static_cast<std::int64_t>(layers_.modules.size()) - 1;
      eachLayerAlone(layers_, input_, detached_, [&](std::int64_t L, const Tensors& in) {
        if (L < last) {
          AutocastCacheOff cacheOff;  // as a checkpointed forward runs them, no cast kept
          return runLayer(*layers_.modules[L], in, layers_.names[L]);
        }
        torch::AutoGradMode withGraph(true);
        Tensors out = runLayer(*layers_.modules[L], in, layers_.names[L]);
        const LossTime time = timeLoss(*loss_->model, out.at(0), loss_->target, device_, precision_);
        if (record) {
          samples_.lossForwardNs.push_back(time.forwardNs);
          samples_.lossBackwardNs.push_back(time.backwardNs);
        }
        return out;
      });
    }
    detached_.clear();
    step_.end();
  }

  /// Whether `passes` more passes of every layer are expected to end within the time: each as
  /// long as the last one (before the first, as the memory passes' run of every layer, when
  /// they timed one).
  bool fit(std::int64_t passes) const { return Clock::now() + passes * lastPass_ <= deadline_; }

 private:
  /// Layer L's forward on `x`, timed; the layer's backward left pending where it is timed.
  /// Returns its output.
  Tensors runForward(std::int64_t L, const Tensors& x, bool record, bool split, bool timed,
                     std::vector<PendingBackward>& pending) {
    detached_.setLayer(L);
    Tensors in = stageInputs(x, L);
    Tensors out;
    const TimedRun forward = clock_.time([&] { out = runLayer(*layers_.modules[L], in, layers_.names[L]); });
    if (record && timed && !split) samples_.addForward(L, forward);
    if (timed) pending.push_back({L, std::move(in), out});
    return out;
  }

  /// The pending backwards in reverse: whole, or each one's I and then every W.
  void timeBackwards(const std::vector<PendingBackward>& pending, bool record, bool split) {
    AutocastPause pause;
    std::vector<WeightBackward> weights(pending.size());
    for (std::size_t i = pending.size(); i-- > 0;) {
      const PendingBackward& layer = pending[i];
      const BackwardRoots backward = backwardRoots(layer.outputs);
      if (!split) {
        // runBackward returns once autograd's device thread has launched it all.
        const TimedRun run = clock_.time([&] { runBackward(backward); });
        if (record) samples_.addBackward(layer.layer, run);
        continue;
      }
      const TimedRun run =
          clock_.time([&] { weights[i].runInputs(backward.roots, backward.grads, gradientEdges(layer.inputs)); });
      if (record) samples_.inputNs[static_cast<std::size_t>(layer.layer)].push_back(run.ns);
    }
    if (!split) return;
    for (std::size_t i = pending.size(); i-- > 0;) {
      const TimedRun run = clock_.time([&] { weights[i].runWeights(); });
      if (record) samples_.weightNs[static_cast<std::size_t>(pending[i].layer)].push_back(run.ns);
    }
  }

  Layers& layers_;
  const Tensors& input_;
  const DeviceClock clock_;
  AutocastScope autocast_;
  torch::Device device_;
  Precision precision_;
  ProfilerSkipTracker detached_;
  ScopedSkipTracker scope_;
  TimeSamples& samples_;
  LossTiming* loss_;
  std::vector<std::pair<std::int64_t, std::int64_t>> windows_;
  StepBoundary step_;
  std::vector<bool> everyLayer_;  ///< the layers a pass runs (those left out take another's figures)
  Clock::time_point deadline_;
  Clock::duration lastPass_;
};

/// The floor, whatever the budget: `minRuns` runs of each layer with the backward whole and as
/// many split (and of the loss, `withLoss`), those the memory and skip passes timed counted.
/// Each pass times the layers still short of it, whole and split in turn, the first of them
/// after a warm-up of the same layers (where `warmupRuns` allows one); where the samples time
/// every layer, none. Then loss passes, the first of them a warm-up likewise. Returns the
/// warm-ups run.
std::int64_t runFloor(TimedPasses& passes, const TimeSamples& samples, bool withLoss, std::int64_t minRuns,
                      std::int64_t warmupRuns) {
  std::int64_t warmups = 0;
  auto floorPass = [&](bool split) {
    const std::vector<bool> shortLayers = samples.layersShortOf(minRuns, split);
    if (std::none_of(shortLayers.begin(), shortLayers.end(), [](bool b) { return b; })) return false;
    if (warmups < std::min<std::int64_t>(1, warmupRuns)) {
      passes.run(false, split, shortLayers);
      ++warmups;
    }
    passes.run(true, split, shortLayers);
    return true;
  };
  for (bool ran = true; ran;) {
    const bool whole = floorPass(false);
    const bool split = floorPass(true);
    ran = whole || split;
  }
  if (!withLoss) return warmups;
  for (bool record = warmupRuns == 0; static_cast<std::int64_t>(samples.lossForwardNs.size()) < minRuns;
       record = true) {
    passes.runLoss(record);
  }
  return warmups;
}

/// Each layer's medians over `samples` into `costs` (on CUDA with the host's launch times), and
/// the loss's into `loss`.
void storeMedians(const TimeSamples& samples, const torch::Device& device, std::vector<CostSample>& costs,
                  LossTiming* loss) {
  for (std::size_t L = 0; L < costs.size(); ++L) {
    costs[L].forwardNs = medianNs(samples.forwardNs[L]);
    costs[L].backwardNs = medianNs(samples.backwardNs[L]);
    BackwardSplit& split = costs[L].backwardSplit.emplace(costs[L].backwardSplit.value_or(BackwardSplit{}));
    split.inputNs = medianNs(samples.inputNs[L]);
    split.weightNs = medianNs(samples.weightNs[L]);
    if (!samples.forwardNoGradNs[L].empty()) costs[L].forwardNoGradNs = medianNs(samples.forwardNoGradNs[L]);
    if (device.is_cuda()) {
      costs[L].forwardLaunch = LaunchCost{medianNs(samples.forwardLaunchNs[L]), 0, 0};
      costs[L].backwardLaunch = LaunchCost{medianNs(samples.backwardLaunchNs[L]), 0, 0};
    }
  }
  if (loss != nullptr) loss->median = LossTime{medianNs(samples.lossForwardNs), medianNs(samples.lossBackwardNs)};
}

}  // namespace

std::int64_t measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs,
                          const torch::Device& device, const LayerProfilerOptions& options, const TimedRuns& runs,
                          TimeSamples samples, LossTiming* loss) {
  TimedPasses passes(layers, input, costs, device, options, runs.seconds, samples, loss);
  const bool withLoss = loss != nullptr;
  const std::int64_t minRuns = std::max<std::int64_t>(1, runs.minRuns);
  std::int64_t warmups = runFloor(passes, samples, withLoss, minRuns, runs.warmupRuns);
  if (samples.noGradRuns() < minRuns && runs.warmupRuns > 0) passes.runWithoutGraph(false);
  while (samples.noGradRuns() < minRuns) passes.runWithoutGraph(true);
  // Past the floor, passes of every layer while the next is expected to end within the budget
  // (the warm-ups left first, each only where a timed pass fits after it), whole and split in
  // turn, at most 100 runs in all; after each split pass a pass without a graph, and after every
  // other whole pass a loss pass, where one fits (each runs a third of a pass or less; the loss
  // pass an idle too, and a budget that bounds the layers' passes leaves them most of it).
  for (; warmups < runs.warmupRuns && passes.fit(2); ++warmups) passes.runEveryLayer(false, warmups % 2 == 1);
  std::int64_t wholePasses = 0;
  for (bool split = false; samples.wholeRuns() + samples.splitRuns() < 2 * kMaxRuns; split = !split) {
    if (runs.stop.stopRequested() || !passes.fit(1)) break;
    passes.runEveryLayer(true, split);
    if (!split && withLoss && wholePasses++ % 2 == 0 && passes.fit(1)) passes.runLoss(true);
    if (split && samples.noGradRuns() < kMaxRuns && passes.fit(1)) passes.runWithoutGraph(true);
  }
  storeMedians(samples, device, costs, loss);
  return samples.wholeRuns() + samples.splitRuns();
}

bool measureKernels(Layers& layers, const Tensors& input, std::vector<CostSample>& costs, const torch::Device& device,
                    CuptiCollector& collector, Precision precision) {
  AutocastScope autocast(precision, device);
  ProfilerSkipTracker detached(ProfilerSkipTracker::HandOut::DetachedLeaf, precision);
  ScopedSkipTracker scope(&detached);
  Tensors x = input;
  for (std::size_t L = 0; L < layers.modules.size(); ++L) {
    if (!layers.runs(static_cast<std::int64_t>(L))) continue;  // takes an identical layer's
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

}  // namespace pipeprof::layer_profiling
