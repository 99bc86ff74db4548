// The layer profiler's time samples at one size: every recorded run of each layer's forward,
// backward, I and W, from the timed passes and from the memory passes that run the same layers
// (one run of a layer gives its time and its memory), and of the loss, from the timed passes.
#pragma once

#include "layer_profiling/loss_profiler.h"
#include "layer_profiling/profiling_scopes.h"

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/model.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipeprof::layer_profiling {

/// The model's loss, timed in the timed passes right after the last layer's forward, on its
/// output, where the last stage runs it, each pass after an optimizer's step (loss_profiler.h,
/// timeLoss).
struct LossTiming {
  const Model* model = nullptr;
  torch::Tensor target;  ///< the batch's, on the timing device
  LossTime median;       ///< over the recorded runs, filled by measureTimes
};

/// One run of a forward or a backward: until the device finished it, and until the host's call
/// returned (on CUDA, when the host had launched it all).
struct TimedRun {
  TimeNs ns = 0;
  TimeNs launchNs = 0;
};

/// Per layer, one entry per recorded run.
struct TimeSamples {
  explicit TimeSamples(std::size_t layers)
      : forwardNs(layers),
        forwardLaunchNs(layers),
        backwardNs(layers),
        backwardLaunchNs(layers),
        inputNs(layers),
        weightNs(layers),
        forwardNoGradNs(layers),
        popsASkip(layers, false),
        leftOut(layers, false) {}

  /// The runs of the model with the backward whole recorded so far: the fewest any layer has
  /// (the loss's runs are its loss passes', layer_time_profiler.cpp).
  std::int64_t wholeRuns() const {
    return fewestRuns([&](std::size_t L) { return std::min(forwardNs[L].size(), backwardNs[L].size()); });
  }
  /// Per layer: whether it has fewer than `runs` runs with the backward whole (its forward and
  /// backward) or, with `split`, with it split (its I and W). A layer left out never is.
  std::vector<bool> layersShortOf(std::int64_t runs, bool split) const {
    std::vector<bool> lacking(forwardNs.size());
    for (std::size_t L = 0; L < lacking.size(); ++L) {
      if (leftOut[L]) continue;
      const std::size_t have =
          split ? std::min(inputNs[L].size(), weightNs[L].size()) : std::min(forwardNs[L].size(), backwardNs[L].size());
      lacking[L] = static_cast<std::int64_t>(have) < runs;
    }
    return lacking;
  }
  /// The runs of the model's forward without a graph recorded so far: the fewest any layer has.
  std::int64_t noGradRuns() const {
    return fewestRuns([&](std::size_t L) { return forwardNoGradNs[L].size(); });
  }
  /// The runs of the model with the backward split recorded so far: the fewest any layer has.
  std::int64_t splitRuns() const {
    return fewestRuns([&](std::size_t L) { return std::min(inputNs[L].size(), weightNs[L].size()); });
  }
  /// The fewest `runsOf(L)` of any layer the passes do not leave out, and `atMost`; 0 when
  /// neither gives a count.
  template <typename RunsOf>
  std::int64_t fewestRuns(RunsOf runsOf, std::size_t atMost = SIZE_MAX) const {
    std::size_t fewest = atMost;
    for (std::size_t L = 0; L < leftOut.size(); ++L) {
      if (!leftOut[L]) fewest = std::min(fewest, runsOf(L));
    }
    return fewest == SIZE_MAX ? 0 : static_cast<std::int64_t>(fewest);
  }

  std::vector<std::vector<TimeNs>> forwardNs;
  std::vector<std::vector<TimeNs>> forwardLaunchNs;  ///< CUDA: the host's time to the forward's return
  std::vector<std::vector<TimeNs>> backwardNs;
  std::vector<std::vector<TimeNs>> backwardLaunchNs;  ///< CUDA: the host's time to the backward's return
  std::vector<std::vector<TimeNs>> inputNs;           ///< the backward split: I
  std::vector<std::vector<TimeNs>> weightNs;          ///< and W
  std::vector<std::vector<TimeNs>> forwardNoGradNs;   ///< the forward without a graph
  std::vector<TimeNs> lossForwardNs;
  std::vector<TimeNs> lossBackwardNs;

  /// Records one run of layer L's forward, or of its whole backward.
  void addForward(std::int64_t L, const TimedRun& run) {
    forwardNs[static_cast<std::size_t>(L)].push_back(run.ns);
    forwardLaunchNs[static_cast<std::size_t>(L)].push_back(run.launchNs);
  }
  void addBackward(std::int64_t L, const TimedRun& run) {
    backwardNs[static_cast<std::size_t>(L)].push_back(run.ns);
    backwardLaunchNs[static_cast<std::size_t>(L)].push_back(run.launchNs);
  }
  /// Per layer: the memory passes do not time it, since they do not run it as a timed pass
  /// does. A layer that pops a skip gets the skip there as a copy that needs no gradient; in a
  /// timed pass (and in a pipeline) its backward also hands the skip a gradient, which autograd
  /// copies (resnet's adds read 40-50% less without it). They time its forward alone; the
  /// whole backward's skip probe, which runs it as a timed pass does, times that backward
  /// (skip_gradient_profiler.h), and measureTimes its I and W.
  std::vector<bool> popsASkip;
  /// Per layer: the passes leave it out; it takes an identical layer's figures
  /// (identical_layers.h), so it has no runs of its own to count.
  std::vector<bool> leftOut;
  /// The wall time of the last run of every layer with the backward whole: what the next is
  /// expected to take.
  std::chrono::steady_clock::duration wholeRun{};
};

/// The device's clock: reads the time once the device has finished what it was given.
class DeviceClock {
 public:
  using Clock = std::chrono::steady_clock;
  explicit DeviceClock(const torch::Device& device) : device_(device) {}

  /// Runs `run` between two readings of the finished clock, the host's return read in between.
  template <typename Run>
  TimedRun time(Run&& run) const {
    const auto start = finished();
    run();
    const auto returned = launched();
    const auto end = finished();
    return {ns(end - start), ns(returned - start)};
  }

  /// Now, before waiting for the device (on CUDA, when the host has launched its work).
  static Clock::time_point launched() { return Clock::now(); }
  /// Now, after waiting for the device.
  Clock::time_point finished() const {
    synchronize(device_);
    return Clock::now();
  }
  static TimeNs ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

 private:
  torch::Device device_;
};

}  // namespace pipeprof::layer_profiling
