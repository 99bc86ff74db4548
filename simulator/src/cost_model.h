// The cost model: micro-batch sizes, per-layer cost prefix sums, and per-candidate op durations and sizes.
#pragma once

#include "compiled_schedule.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pipeprof::sim {

/// Every layer's costs at one micro-batch size, as prefix sums over layers (index l holds
/// the sum over layers [0, l)).
struct LayerCostTable {
  std::int64_t microBatch = 0;
  std::vector<TimeNs> forwardPrefix;
  std::vector<TimeNs> forwardNoGradPrefix;  ///< CostSample::forwardWithoutGraphNs
  std::vector<TimeNs> backwardPrefix;
  std::vector<Bytes> savedPrefix;
  /// The backward's I/W split (profiles that carry it; else all zero).
  std::vector<TimeNs> backwardInputPrefix;
  std::vector<TimeNs> backwardWeightPrefix;
  std::vector<Bytes> weightSavedPrefix;
  std::vector<Bytes> weightWorkspaceBytes;  ///< per layer
  /// Per layer: the gradient of its output that a split backward's I keeps for the layer's W
  /// (its output's size where W keeps anything, else 0).
  std::vector<Bytes> outputGradientKeptBytes;
  /// Per layer: I's transient peak above its start, its output's gradient included
  /// (BackwardSplit::inputWorkspaceBytes; profiles without it: the backward's less W's).
  std::vector<Bytes> inputWorkspaceBytes;
  /// Per layer: the gradients I keeps for W (BackwardSplit::inputKeptBytes; profiles without
  /// it: outputGradientKeptBytes).
  std::vector<Bytes> inputKeptBytes;
  std::vector<Bytes> outputBytes;       ///< as held in memory (an allocator block on CUDA)
  std::vector<Bytes> outputMovedBytes;  ///< as a copy moves it (the tensor's own bytes)
  /// Per layer: the part of outputBytes the graph keeps, counted in savedBytes (its own or an
  /// earlier layer's); the rest is freed once nothing else holds the output
  /// (CostSample::outputSavedBytes; profiles without it: min(outputBytes, savedBytes)).
  std::vector<Bytes> outputSavedBytes;
  /// The rest of layer l's output: live from its forward until nothing else holds it.
  Bytes unsavedOutputBytes(std::size_t l) const { return outputBytes[l] - outputSavedBytes[l]; }
  std::vector<Bytes> forwardWorkspaceBytes;
  /// Per layer: the backward's peak above its start as a stage's last layer runs it (its output
  /// and the gradient of it held throughout) and as a layer inside a stage (both let go once
  /// used; CostSample::innerBackwardWorkspaceBytes, profiles without it: the former).
  std::vector<Bytes> backwardWorkspaceBytes;
  std::vector<Bytes> innerBackwardWorkspaceBytes;
  /// Per layer: how far its backward's (I's) last allocation lifts that peak at its end
  /// (CostSample::backwardEndRiseBytes, inputEndRiseBytes; profiles without them: 0).
  std::vector<Bytes> backwardEndRiseBytes;
  std::vector<Bytes> inputEndRiseBytes;
  /// Per layer: the part of its saved bytes the next layer's backward frees, one layer early
  /// (CostSample::savedFreedByNextBytes, at most savedBytes; profiles without it: 0).
  std::vector<Bytes> savedFreedByNextBytes;
  /// The loss on the last layer's output (Profile::loss; all zero when the profile has none).
  CostSample loss;
  /// Launch data (the profile carries it; else all empty), prefix sums like the times above:
  /// the host's launch time, the device time and the kernel count of each pass.
  std::vector<TimeNs> forwardHostPrefix;
  std::vector<TimeNs> forwardDevicePrefix;
  std::vector<std::int64_t> forwardKernelPrefix;
  std::vector<TimeNs> backwardHostPrefix;
  std::vector<TimeNs> backwardDevicePrefix;
  std::vector<std::int64_t> backwardKernelPrefix;
};

/// A profile's costs, cached per micro-batch size so a search interpolates each size once.
///
/// On a CUDA profile the sizes are the caching allocator's (core/allocator_rounding.h): a figure
/// of one tensor (a layer's output, a skip tensor, so every copy buffer and boundary gradient)
/// is the block the allocator hands out for it, a figure that sums several tensors (saved bytes,
/// workspaces, parameters) is rounded up to whole 512-byte blocks. A CPU profile's sizes are
/// used as they are.
class CostModel {
 public:
  explicit CostModel(const Profile& profile);

  const Profile& profile() const { return *profile_; }
  /// Whether the profile carries launch data (Profile::hasLaunchData): compute ops then run
  /// the launch model (docs/simulator.md, "Launches").
  bool launches() const { return launches_; }
  /// Whether the profile carries the backward's I/W split (Profile::hasBackwardSplit), which
  /// a schedule that splits the backward needs.
  bool backwardSplit() const { return backwardSplit_; }
  /// The table at a micro-batch size (computed on first use, then cached).
  const LayerCostTable& table(std::int64_t microBatch);
  /// Sum of param + grad + optimizer bytes of layers [first, end).
  Bytes staticBytes(std::int64_t first, std::int64_t end) const;
  /// Library workspaces one stage holds all step long on a CUDA profile: one per host thread
  /// that launches the stage's work on its stream -- its device's worker thread (forward,
  /// recompute) and, when training, the autograd engine's thread for the device (backward) --
  /// each libraryWorkspaceBytes. 0 on other profiles.
  Bytes libraryWorkspaceBytes(bool training) const;
  /// The size of one tensor of `bytes` as the model counts it (the allocator's block on CUDA).
  Bytes tensorBytes(Bytes bytes) const;
  /// Per skip of the profile: whether its stash layer returns the tensor it was given, which it
  /// stashes (pipeprof's StashLayer, torchgpipe's idiom). The profile does not say that a
  /// layer's output is its input; such a layer is recognised by what it measured at every size:
  /// it saves nothing, has no forward workspace, and its output is the size of the skip.
  const std::vector<bool>& stashReturnsItsInput() const { return stashReturnsItsInput_; }

 private:
  /// A figure summing several tensors, as the model counts it (whole blocks on CUDA).
  Bytes sumBytes(Bytes bytes) const;
  /// Fills the table's launch prefix sums (profiles with launch data only).
  void fillLaunchPrefixes(LayerCostTable& table) const;

  const Profile* profile_;
  bool cuda_;
  bool launches_;
  bool backwardSplit_;
  std::vector<Bytes> staticPrefix_;
  std::vector<bool> stashReturnsItsInput_;
  std::vector<std::unique_ptr<LayerCostTable>> tables_;
};

/// One candidate's numbers, indexed by the compiled schedule's slots.
struct ResolvedCosts {
  std::vector<TimeNs> durationNs;         ///< 2 * layout.durationsPerClass()
  std::vector<Bytes> bytes;               ///< 2 * layout.bytesPerClass()
  std::vector<Bytes> staticBytes;         ///< per stage
  std::vector<std::int32_t> stageDevice;  ///< cluster device of each stage
  /// Shared links (the cluster names hosts; docs/simulator.md, "Links"), else both empty:
  /// per cluster device the index of its host (hosts numbered in order of first appearance),
  /// and per duration slot the latency part of a copy's duration (the rest is drain time).
  std::vector<std::int32_t> deviceHost;
  std::vector<TimeNs> copyLatencyNs;
  /// Launch data (the profile carries it; docs/simulator.md, "Launches"), else both empty: per
  /// duration slot, the host's time launching a forward (recompute) or backward -- not scaled
  /// by the device's speed -- and its kernel count; durationNs then holds those ops' device time.
  std::vector<TimeNs> launchNs;
  std::vector<std::int64_t> kernels;
  /// Cluster::wakeLatencyNs: a lane's worker idle when another lane's op makes its next op
  /// ready starts it this much later (without launch data; docs/simulator.md, "Waking a worker").
  TimeNs wakeLatencyNs = 0;
  /// Per duration slot, what a compute op after another stage's op on its device
  /// (CompiledOp::afterStageSwitch) runs beyond durationNs: (Profile::stageSwitchScales - 1) x
  /// durationNs; empty when every scale is 1.
  std::vector<TimeNs> afterSwitchExtraNs;
  /// Per duration slot, what a compute op that is its stage's first of its kind in the step
  /// (CompiledOp::firstInStep) runs beyond durationNs: (Profile::firstInStepScales - 1) x
  /// durationNs; empty when every scale is 1.
  std::vector<TimeNs> firstInStepExtraNs;

  /// An op's duration: its slot's, with the stage switch's extra where it follows one and the
  /// step's first op's where it is its stage's first of its kind.
  TimeNs opDurationNs(std::size_t slot, const CompiledOp& c) const {
    TimeNs ns = durationNs[slot];
    if (c.afterStageSwitch && !afterSwitchExtraNs.empty()) ns += afterSwitchExtraNs[slot];
    if (c.firstInStep && !firstInStepExtraNs.empty()) ns += firstInStepExtraNs[slot];
    return ns;
  }
  bool sharedLinks() const { return !deviceHost.empty(); }
  bool launches() const { return !launchNs.empty(); }
  std::int32_t hostCount() const;
};

/// Per cluster device the index of its host, hosts numbered in order of first appearance;
/// empty when the cluster names no hosts. Throws std::invalid_argument for a hosts list that
/// is not one name per device.
std::vector<std::int32_t> hostIndices(const Cluster& cluster);

/// A profile time on a device: time / relativeSpeed, rounded to the nearest nanosecond
/// (exact when the speed is 1).
TimeNs scaleTime(TimeNs profileNs, double relativeSpeed);

/// A split backward's I and W times as stage j runs them: the profile's halves, except on
/// the first stage, whose I computes nothing (no input wants a gradient,
/// runtime/src/stage/split_backward.h) and whose W runs the whole backward in one pass: the
/// profile's backward time, not the halves' sum (each half walks the graph: a gpt block's I + W
/// measures 8% above its B).
struct SplitTimes {
  TimeNs inputNs = 0;
  TimeNs weightNs = 0;
};
inline SplitTimes stageSplitTimes(std::int64_t j, TimeNs inputNs, TimeNs weightNs, TimeNs backwardNs) {
  return j == 0 ? SplitTimes{0, backwardNs} : SplitTimes{inputNs, weightNs};
}

/// Whether a link moves data for free (latency 0 and infinite bandwidth): no time, no buffer.
bool isZeroCostLink(const Link& link);

/// Fills `out` (reusing its storage) for the candidate. firstLayer has n + 1 entries (the
/// last is the layer count). The candidate must have been validated against the cluster.
void resolveCosts(const CompiledSchedule& compiled, CostModel& costs, const Cluster& cluster,
                  const Candidate& candidate, const MicroBatching& batching,
                  const std::vector<std::int64_t>& firstLayer, ResolvedCosts& out);

}  // namespace pipeprof::sim
