// The layer profiler's timed passes (layer_time_profiler.h).
#include "layer_profiling/layer_time_profiler.h"

#include "layer_profiling/loss_profiler.h"
#include "layer_profiling/profiling_scopes.h"
#include "stage/autocast.h"
#include "stage/split_backward.h"

#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

namespace pipeprof::layer_profiling {

namespace {

constexpr std::int64_t kMaxRuns = 50;

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

std::int64_t measureTimes(Layers& layers, const Tensors& input, std::vector<CostSample>& costs,
                          const torch::Device& device, const LayerProfilerOptions& options, const TimedRuns& runs,
                          TimeSamples samples, LossTiming* loss) {
  using Clock = DeviceClock::Clock;
  const DeviceClock clock(device);
  AutocastScope autocast(options.precision, device);
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  ProfilerSkipTracker detached(ProfilerSkipTracker::HandOut::DetachedLeaf, options.precision);
  ScopedSkipTracker scope(&detached);
  // A pass runs the layers as a stage does (docs/profiler.md, "In a stage's order"): window by
  // window, every layer's forward in order, then the backwards of the layers `timedLayers` marks in
  // reverse, whole or (every other pass) split -- each window's I's, then its W's. Those layers
  // are timed (a split pass's forwards are not recorded twice); the others' outputs only feed the
  // next. A backward's output gradient is made just before it, outside the clock: inside a stage
  // the next layer's backward has just written it (filled long before, unet's first stash, an
  // identity with a 4 MiB output, read 736 us instead of 39 us).
  const std::vector<std::pair<std::int64_t, std::int64_t>> windows = stageWindows(costs);
  auto timeBackwards = [&](const std::vector<PendingBackward>& pending, bool record, bool split) {
    AutocastPause pause;
    std::vector<WeightBackward> weights(pending.size());
    for (std::size_t i = pending.size(); i-- > 0;) {
      const PendingBackward& layer = pending[i];
      const BackwardRoots backward = backwardRoots(layer.outputs);
      if (!split) {
        // runBackward returns once autograd's device thread has launched it all.
        const TimedRun run = clock.time([&] { runBackward(backward); });
        if (record) samples.addBackward(layer.layer, run);
        continue;
      }
      const TimedRun run =
          clock.time([&] { weights[i].runInputs(backward.roots, backward.grads, gradientEdges(layer.inputs)); });
      if (record) samples.inputNs[static_cast<std::size_t>(layer.layer)].push_back(run.ns);
    }
    if (!split) return;
    for (std::size_t i = pending.size(); i-- > 0;) {
      const TimedRun run = clock.time([&] { weights[i].runWeights(); });
      if (record) samples.weightNs[static_cast<std::size_t>(pending[i].layer)].push_back(run.ns);
    }
  };
  auto pass = [&](bool record, bool split, const std::vector<bool>& timedLayers) {
    Tensors x = input;
    for (const auto& [begin, end] : windows) {
      std::vector<PendingBackward> pending;
      for (std::int64_t L = begin; L < end; ++L) {
        if (!layers.runs(L)) continue;  // its input, of its output's shape, feeds the next
        detached.setLayer(L);
        Tensors in = stageInputs(x, L);
        Tensors out;
        const TimedRun forward = clock.time([&] { out = runLayer(*layers.modules[L], in, layers.names[L]); });
        const bool timed = timedLayers[static_cast<std::size_t>(L)];
        if (record && timed && !split) samples.addForward(L, forward);
        if (loss != nullptr && L + 1 == n) {
          const LossTime time = timeLoss(*loss->model, out.at(0), loss->target, device, options.precision);
          if (record) {
            samples.lossForwardNs.push_back(time.forwardNs);
            samples.lossBackwardNs.push_back(time.backwardNs);
          }
        }
        x = out;
        if (timed) pending.push_back({L, std::move(in), std::move(out)});
      }
      timeBackwards(pending, record, split);
    }
    detached.clear();
  };
  // A pass of every layer is expected to take as long as the last one did (before the first:
  // as long as the memory passes' run of every layer, when they timed one).
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, runs.seconds)));
  Clock::duration lastPass = samples.wholeRun;
  std::vector<bool> everyLayer(static_cast<std::size_t>(n));
  for (std::int64_t L = 0; L < n; ++L) everyLayer[static_cast<std::size_t>(L)] = layers.runs(L);
  auto timedPass = [&](bool record, bool split, const std::vector<bool>& timedLayers) {
    const auto t0 = Clock::now();
    pass(record, split, timedLayers);
    if (timedLayers == everyLayer) lastPass = Clock::now() - t0;
  };
  auto fits = [&](std::int64_t passes) { return Clock::now() + passes * lastPass <= deadline; };
  // The floor, whatever the budget: `minRuns` runs of each layer with the backward whole and
  // as many split, those the memory and skip passes timed counted. Each pass times the layers
  // still short of it (with a first warm-up of the same layers before it); where the memory
  // passes timed every layer, none.
  const std::int64_t minRuns = std::max<std::int64_t>(1, runs.minRuns);
  std::int64_t warmups = 0;
  auto floorPass = [&](bool split) {
    const std::vector<bool> shortLayers = samples.layersShortOf(minRuns, split);
    const bool lossShort =
        !split && loss != nullptr && static_cast<std::int64_t>(samples.lossForwardNs.size()) < minRuns;
    if (!lossShort && std::none_of(shortLayers.begin(), shortLayers.end(), [](bool b) { return b; })) return false;
    if (warmups < std::min<std::int64_t>(1, runs.warmupRuns)) {
      timedPass(false, split, shortLayers);
      ++warmups;
    }
    timedPass(true, split, shortLayers);
    return true;
  };
  for (bool ran = true; ran;) {
    const bool whole = floorPass(false);
    const bool split = floorPass(true);
    ran = whole || split;
  }
  auto noGradPass = [&](bool record) { forwardPassWithoutGraph(layers, input, clock, detached, samples, record); };
  if (samples.noGradRuns() < minRuns && runs.warmupRuns > 0) noGradPass(false);
  while (samples.noGradRuns() < minRuns) noGradPass(true);
  // Past the floor, passes of every layer while the next is expected to end within the budget
  // (the warm-ups left first, each only where a timed pass fits after it), whole and split in
  // turn, at most 100 runs in all.
  for (; warmups < runs.warmupRuns && fits(2); ++warmups) timedPass(false, warmups % 2 == 1, everyLayer);
  // After each split pass, a pass without a graph where one fits (it runs a third of one).
  for (bool split = false; samples.wholeRuns(loss != nullptr) + samples.splitRuns() < 2 * kMaxRuns; split = !split) {
    if (runs.stop.stopRequested() || !fits(1)) break;
    timedPass(true, split, everyLayer);
    if (split && samples.noGradRuns() < kMaxRuns && fits(1)) noGradPass(true);
  }
  for (std::int64_t L = 0; L < n; ++L) {
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
  if (loss != nullptr) {
    loss->median = LossTime{medianNs(samples.lossForwardNs), medianNs(samples.lossBackwardNs)};
  }
  return samples.wholeRuns(loss != nullptr) + samples.splitRuns();
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
