// The cost model: micro-batch sizes, per-layer cost prefix sums, and per-candidate op durations and sizes.
#include "cost_model.h"

#include "cold_cache_costs.h"
#include "skip_gradient_bytes.h"
#include "stage_memory.h"

#include <pipeprof/core/allocator_rounding.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace pipeprof::sim {

CostModel::CostModel(const Profile& profile)
    : profile_(&profile),
      cuda_(profile.onCuda()),
      launches_(profile.hasLaunchData()),
      backwardSplit_(profile.hasBackwardSplit()) {
  staticPrefix_.assign(profile.layers.size() + 1, 0);
  for (std::size_t l = 0; l < profile.layers.size(); ++l) {
    const LayerProfile& layer = profile.layers[l];
    staticPrefix_[l + 1] =
        staticPrefix_[l] + sumBytes(layer.paramBytes) + sumBytes(layer.gradBytes) + sumBytes(layer.optimizerBytes);
  }
  for (const SkipProfile& skip : profile.skips) {
    const std::vector<CostSample>& samples = profile.layers.at(static_cast<std::size_t>(skip.stashLayer)).costs;
    stashReturnsItsInput_.push_back(!samples.empty() &&
                                    std::all_of(samples.begin(), samples.end(), [&](const CostSample& sample) {
                                      return sample.savedBytes == 0 && sample.forwardWorkspaceBytes == 0 &&
                                             sample.outputBytes == skip.bytesPerSample * sample.microBatch;
                                    }));
  }
}

Bytes CostModel::tensorBytes(Bytes bytes) const { return cuda_ ? roundToAllocatorBlock(bytes) : bytes; }

Bytes CostModel::sumBytes(Bytes bytes) const {
  return cuda_ ? roundUpToMultiple(bytes, kAllocatorMinBlockBytes) : bytes;
}

Bytes CostModel::libraryWorkspaceBytes(bool training) const {
  if (!cuda_) return 0;
  const Bytes threads = training ? 2 : 1;  // the worker's, and the autograd engine's for backward
  return threads * profile_->libraryWorkspaceBytes;
}

const LayerCostTable& CostModel::table(std::int64_t microBatch) {
  for (const auto& table : tables_) {
    if (table->microBatch == microBatch) return *table;
  }
  auto table = std::make_unique<LayerCostTable>();
  table->microBatch = microBatch;
  const std::size_t layers = profile_->layers.size();
  table->forwardPrefix.assign(layers + 1, 0);
  table->forwardNoGradPrefix.assign(layers + 1, 0);
  table->backwardPrefix.assign(layers + 1, 0);
  table->savedPrefix.assign(layers + 1, 0);
  table->backwardInputPrefix.assign(layers + 1, 0);
  table->backwardWeightPrefix.assign(layers + 1, 0);
  table->weightSavedPrefix.assign(layers + 1, 0);
  table->weightWorkspaceBytes.assign(layers, 0);
  table->outputGradientKeptBytes.assign(layers, 0);
  table->inputWorkspaceBytes.assign(layers, 0);
  table->inputKeptBytes.assign(layers, 0);
  table->outputBytes.assign(layers, 0);
  table->outputMovedBytes.assign(layers, 0);
  table->outputSavedBytes.assign(layers, 0);
  table->forwardWorkspaceBytes.assign(layers, 0);
  table->backwardWorkspaceBytes.assign(layers, 0);
  table->innerBackwardWorkspaceBytes.assign(layers, 0);
  table->backwardEndRiseBytes.assign(layers, 0);
  table->inputEndRiseBytes.assign(layers, 0);
  table->savedFreedByNextBytes.assign(layers, 0);
  for (std::size_t l = 0; l < layers; ++l) {
    const CostSample cost = profile_->layers[l].costAt(microBatch);
    table->forwardPrefix[l + 1] = table->forwardPrefix[l] + cost.forwardNs;
    table->forwardNoGradPrefix[l + 1] = table->forwardNoGradPrefix[l] + cost.forwardWithoutGraphNs();
    table->backwardPrefix[l + 1] = table->backwardPrefix[l] + cost.backwardNs;
    table->savedPrefix[l + 1] = table->savedPrefix[l] + sumBytes(cost.savedBytes);
    const BackwardSplit split = cost.backwardSplit.value_or(BackwardSplit{});
    table->backwardInputPrefix[l + 1] = table->backwardInputPrefix[l] + split.inputNs;
    table->backwardWeightPrefix[l + 1] = table->backwardWeightPrefix[l] + split.weightNs;
    table->weightSavedPrefix[l + 1] = table->weightSavedPrefix[l] + sumBytes(split.weightSavedBytes);
    table->weightWorkspaceBytes[l] = sumBytes(split.weightWorkspaceBytes);
    table->outputBytes[l] = tensorBytes(cost.outputBytes);
    const Bytes weightSaved = sumBytes(split.weightSavedBytes);
    table->outputGradientKeptBytes[l] = weightSaved > 0 ? std::min(weightSaved, table->outputBytes[l]) : 0;
    table->outputMovedBytes[l] = cost.outputBytes;
    table->outputSavedBytes[l] = std::min(
        table->outputBytes[l], cost.outputSavedBytes ? tensorBytes(*cost.outputSavedBytes) : sumBytes(cost.savedBytes));
    table->forwardWorkspaceBytes[l] = sumBytes(cost.forwardWorkspaceBytes);
    table->backwardWorkspaceBytes[l] = sumBytes(cost.backwardWorkspaceBytes);
    table->innerBackwardWorkspaceBytes[l] =
        sumBytes(cost.innerBackwardWorkspaceBytes.value_or(cost.backwardWorkspaceBytes));
    table->backwardEndRiseBytes[l] = sumBytes(cost.backwardEndRiseBytes.value_or(0));
    table->inputEndRiseBytes[l] = sumBytes(cost.inputEndRiseBytes.value_or(0));
    table->savedFreedByNextBytes[l] =
        std::min(sumBytes(cost.savedBytes), sumBytes(cost.savedFreedByNextBytes.value_or(0)));
    table->inputWorkspaceBytes[l] =
        split.inputWorkspaceBytes
            ? sumBytes(*split.inputWorkspaceBytes)
            : std::max<Bytes>(0, table->backwardWorkspaceBytes[l] - table->weightWorkspaceBytes[l]);
    table->inputKeptBytes[l] =
        split.inputKeptBytes ? sumBytes(*split.inputKeptBytes) : table->outputGradientKeptBytes[l];
  }
  table->loss = profile_->loss.costAt(microBatch);
  table->loss.savedBytes = sumBytes(table->loss.savedBytes);
  table->loss.forwardWorkspaceBytes = sumBytes(table->loss.forwardWorkspaceBytes);
  table->loss.backwardWorkspaceBytes = sumBytes(table->loss.backwardWorkspaceBytes);
  if (launches_) fillLaunchPrefixes(*table);
  tables_.push_back(std::move(table));
  return *tables_.back();
}

void CostModel::fillLaunchPrefixes(LayerCostTable& table) const {
  const std::size_t layers = profile_->layers.size();
  table.forwardHostPrefix.assign(layers + 1, 0);
  table.forwardDevicePrefix.assign(layers + 1, 0);
  table.forwardKernelPrefix.assign(layers + 1, 0);
  table.backwardHostPrefix.assign(layers + 1, 0);
  table.backwardDevicePrefix.assign(layers + 1, 0);
  table.backwardKernelPrefix.assign(layers + 1, 0);
  for (std::size_t l = 0; l < layers; ++l) {
    const CostSample cost = profile_->layers[l].costAt(table.microBatch);
    const LaunchCost forward = cost.forwardLaunch.value_or(LaunchCost{});
    const LaunchCost backward = cost.backwardLaunch.value_or(LaunchCost{});
    table.forwardHostPrefix[l + 1] = table.forwardHostPrefix[l] + forward.hostNs;
    table.forwardDevicePrefix[l + 1] = table.forwardDevicePrefix[l] + forward.deviceNs;
    table.forwardKernelPrefix[l + 1] = table.forwardKernelPrefix[l] + forward.kernels;
    table.backwardHostPrefix[l + 1] = table.backwardHostPrefix[l] + backward.hostNs;
    table.backwardDevicePrefix[l + 1] = table.backwardDevicePrefix[l] + backward.deviceNs;
    table.backwardKernelPrefix[l + 1] = table.backwardKernelPrefix[l] + backward.kernels;
  }
}

Bytes CostModel::staticBytes(std::int64_t first, std::int64_t end) const {
  return staticPrefix_[static_cast<std::size_t>(end)] - staticPrefix_[static_cast<std::size_t>(first)];
}

namespace {

/// Whether layer l stashes skip s and returns it as its output, the tensor it was given
/// (CostModel::stashReturnsItsInput).
bool passesOnItsInput(const CostModel& costs, std::int32_t s, std::size_t l) {
  return static_cast<std::size_t>(costs.profile().skips[static_cast<std::size_t>(s)].stashLayer) == l &&
         costs.stashReturnsItsInput()[static_cast<std::size_t>(s)];
}

/// The first layer of [first, end) whose input is the stage's input as it arrived: the
/// first, or the one after the stash layers at the start that pass it on (a residual block's
/// first convolution, behind the stash of its shortcut).
std::size_t firstInputUser(const CostModel& costs, std::size_t first, std::size_t end) {
  const auto skips = static_cast<std::int32_t>(costs.profile().skips.size());
  auto passesItOn = [&](std::size_t l) {
    for (std::int32_t s = 0; s < skips; ++s) {
      if (passesOnItsInput(costs, s, l)) return true;
    }
    return false;
  };
  std::size_t l = first;
  while (l + 1 < end && passesItOn(l)) ++l;
  return l;
}

/// Per stage j, the skip that j's last layer stashes and passes on as j's output, or -1
/// (empty when the profile has no skips). A stash layer that returns what it stashes
/// (passesOnItsInput) makes the skip and the stage's output one tensor, allocated by the layer
/// before it. Only a skip that leaves its stage matters (one popped inside it is gone by
/// then).
std::vector<std::int32_t> skipsPassedOn(const CompiledSchedule& compiled, const CostModel& costs,
                                        const std::vector<std::int64_t>& firstLayer) {
  const SlotLayout& layout = compiled.layout;
  if (layout.skips == 0) return {};  // no allocation on the search's path for models without skips
  std::vector<std::int32_t> passedOn(static_cast<std::size_t>(layout.n), -1);
  for (std::int32_t s = 0; s < layout.skips; ++s) {
    const std::int32_t stash = compiled.skipStashStage[static_cast<std::size_t>(s)];
    if (stash == compiled.skipPopStage[static_cast<std::size_t>(s)]) continue;
    const auto last = static_cast<std::size_t>(firstLayer[static_cast<std::size_t>(stash) + 1] - 1);
    if (passedOn[static_cast<std::size_t>(stash)] < 0 && passesOnItsInput(costs, s, last)) {
      passedOn[static_cast<std::size_t>(stash)] = s;
    }
  }
  return passedOn;
}

}  // namespace

TimeNs scaleTime(TimeNs profileNs, double relativeSpeed) {
  if (relativeSpeed == 1.0) return profileNs;
  return static_cast<TimeNs>(std::llround(static_cast<double>(profileNs) / relativeSpeed));
}

bool isZeroCostLink(const Link& link) { return link.latencyNs == 0 && link.bandwidthBytesPerS == 0.0; }

std::int32_t ResolvedCosts::hostCount() const {
  std::int32_t count = 0;
  for (std::int32_t host : deviceHost) count = std::max(count, host + 1);
  return count;
}

std::vector<std::int32_t> hostIndices(const Cluster& cluster) {
  std::vector<std::int32_t> indices;
  if (cluster.hosts.empty()) return indices;
  if (cluster.hosts.size() != cluster.devices.size()) {
    throw std::invalid_argument("the cluster names " + std::to_string(cluster.hosts.size()) + " hosts for " +
                                std::to_string(cluster.devices.size()) + " devices; give one host per device, or none");
  }
  indices.resize(cluster.hosts.size());
  std::int32_t next = 0;
  for (std::size_t d = 0; d < cluster.hosts.size(); ++d) {
    std::size_t first = 0;
    while (cluster.hosts[first] != cluster.hosts[d]) ++first;  // the host's first device
    indices[d] = first == d ? next++ : indices[first];
  }
  return indices;
}

namespace {

/// Profiles with launch data: a forward's (recompute's) and a backward's host launch time and
/// kernel count, and their device time in place of the synchronised one (a forward without a
/// graph: the forward's). The device runs the kernels at its speed; the host launches them at its
/// own.
void resolveLaunches(const CompiledSchedule& compiled, CostModel& costs, const Cluster& cluster,
                     const MicroBatching& batching, const std::vector<std::int64_t>& firstLayer, ResolvedCosts& out) {
  const SlotLayout& layout = compiled.layout;
  out.launchNs.assign(out.durationNs.size(), 0);
  out.kernels.assign(out.durationNs.size(), 0);
  for (int sizeClass = 0; sizeClass < 2; ++sizeClass) {
    const LayerCostTable& table = costs.table(sizeClass == 0 ? batching.chunkSize : batching.lastSize);
    const std::int32_t classSlot = sizeClass * layout.durationsPerClass();
    for (std::int32_t j = 0; j < layout.n; ++j) {
      const auto first = static_cast<std::size_t>(firstLayer[static_cast<std::size_t>(j)]);
      const auto end = static_cast<std::size_t>(firstLayer[static_cast<std::size_t>(j) + 1]);
      const double speed =
          cluster.devices[static_cast<std::size_t>(out.stageDevice[static_cast<std::size_t>(j)])].relativeSpeed;
      const auto forward = static_cast<std::size_t>(classSlot + layout.forwardNs(j));
      const auto backward = static_cast<std::size_t>(classSlot + layout.backwardNs(j));
      out.durationNs[forward] = scaleTime(table.forwardDevicePrefix[end] - table.forwardDevicePrefix[first], speed);
      out.durationNs[backward] = scaleTime(table.backwardDevicePrefix[end] - table.backwardDevicePrefix[first], speed);
      out.launchNs[forward] = table.forwardHostPrefix[end] - table.forwardHostPrefix[first];
      out.launchNs[backward] = table.backwardHostPrefix[end] - table.backwardHostPrefix[first];
      out.kernels[forward] = table.forwardKernelPrefix[end] - table.forwardKernelPrefix[first];
      out.kernels[backward] = table.backwardKernelPrefix[end] - table.backwardKernelPrefix[first];
      // A forward without a graph launches the same kernels (its launches are measured with one).
      const auto noGrad = static_cast<std::size_t>(classSlot + layout.forwardNoGradNs(j));
      out.durationNs[noGrad] = out.durationNs[forward];
      out.launchNs[noGrad] = out.launchNs[forward];
      out.kernels[noGrad] = out.kernels[forward];
      if (!compiled.splitsBackward) continue;
      // I and W launch the backward's kernels between them, in proportion to their times.
      const auto input = static_cast<std::size_t>(classSlot + layout.backwardInputNs(j));
      const auto weight = static_cast<std::size_t>(classSlot + layout.backwardWeightNs(j));
      const TimeNs inputNs = table.backwardInputPrefix[end] - table.backwardInputPrefix[first];
      const TimeNs weightNs = table.backwardWeightPrefix[end] - table.backwardWeightPrefix[first];
      const double share = j == 0 ? 0.0  // the first stage's I computes nothing
                           : inputNs + weightNs > 0
                               ? static_cast<double>(inputNs) / static_cast<double>(inputNs + weightNs)
                               : 1.0;
      auto part = [share](std::int64_t whole) { return static_cast<std::int64_t>(std::llround(share * whole)); };
      out.durationNs[input] = part(out.durationNs[backward]);
      out.durationNs[weight] = out.durationNs[backward] - out.durationNs[input];
      out.launchNs[input] = part(out.launchNs[backward]);
      out.launchNs[weight] = out.launchNs[backward] - out.launchNs[input];
      out.kernels[input] = part(out.kernels[backward]);
      out.kernels[weight] = out.kernels[backward] - out.kernels[input];
    }
  }
}

/// The loss on the last stage's device (zero costs when the profile has none): its forward
/// as the loss op (a step's later ones less its cold start), again inside the last stage's
/// recompute (a later call), its backward at the start of
/// backward(i, n-1); its graph's bytes from the loss (or that recompute) to that backward, less
/// the output when the graph does not keep it (the part of it no layer saved is freed), its
/// forward's transient on top, its backward's peak before the last layers' (their figure counts
/// the graph, which is gone by then). Runs after the layers' durations are final.
void addLossCosts(const CompiledSchedule& compiled, CostModel& costs, const Cluster& cluster,
                  const MicroBatching& batching, ResolvedCosts& out) {
  const SlotLayout& layout = compiled.layout;
  if (!compiled.training) return;
  const std::int32_t last = layout.n - 1;
  const double speed =
      cluster.devices[static_cast<std::size_t>(out.stageDevice[static_cast<std::size_t>(last)])].relativeSpeed;
  for (int sizeClass = 0; sizeClass < 2; ++sizeClass) {
    const CostSample& loss = costs.table(sizeClass == 0 ? batching.chunkSize : batching.lastSize).loss;
    const std::int32_t classSlot = sizeClass * layout.durationsPerClass();
    TimeNs* duration = out.durationNs.data() + classSlot;
    Bytes* bytes = out.bytes.data() + sizeClass * layout.bytesPerClass();
    duration[layout.lossNs()] = scaleTime(loss.forwardNs, speed);
    const TimeNs coldStartNs = costs.profile().loss.coldStartNs;
    duration[layout.laterLossNs()] = scaleTime(std::max<TimeNs>(0, loss.forwardNs - coldStartNs), speed);
    duration[layout.recomputeWithLossNs()] = duration[layout.forwardNs(last)] + duration[layout.laterLossNs()];
    duration[layout.backwardNs(last)] += scaleTime(loss.backwardNs, speed);
    // The output's gradient: I's, or W's on a single stage (its I computes nothing).
    duration[last == 0 ? layout.backwardWeightNs(last) : layout.backwardInputNs(last)] +=
        scaleTime(loss.backwardNs, speed);
    if (costs.launches()) {  // the loss's kernels are not counted apart: its time joins the recompute's
      const auto from = static_cast<std::size_t>(classSlot + layout.forwardNs(last));
      const auto to = static_cast<std::size_t>(classSlot + layout.recomputeWithLossNs());
      out.launchNs[to] = out.launchNs[from];
      out.kernels[to] = out.kernels[from];
    }
    const Bytes outputLetGo = costs.profile().loss.keepsOutput ? 0 : bytes[layout.unsavedOutput(last)];
    bytes[layout.lossHeld()] = loss.savedBytes - outputLetGo;
    bytes[layout.lossPeak()] = loss.savedBytes + loss.forwardWorkspaceBytes;
    // (The last stage's recompute is charged its peak from its start: held there, the
    // loss's peak on top of the recomputed graph matched resnet's measured devices better.)
    bytes[layout.recomputeWithLossPeak()] =
        std::max(bytes[layout.gradForwardPeak(last)] + bytes[layout.gradForwardPeakAtEnd(last)],
                 bytes[layout.saved(last)] + bytes[layout.unsavedOutput(last)] + bytes[layout.lossPeak()]);
    // B runs the loss's backward first, which frees what its graph saved (the output too, when
    // the loss keeps it); I keeps them until it ends.
    const Bytes outputKept = costs.profile().loss.keepsOutput ? bytes[layout.unsavedOutput(last)] : 0;
    const Bytes freedByLoss = loss.savedBytes + outputKept;
    bytes[layout.backwardPeak(last)] =
        std::max(loss.backwardWorkspaceBytes, bytes[layout.backwardPeak(last)] - freedByLoss);
    Bytes& atEnd = bytes[layout.backwardPeakAtEnd(last)];  // gone by then as well
    if (atEnd > 0) atEnd = std::max<Bytes>(0, atEnd - freedByLoss);
    bytes[layout.backwardInputPeak(last)] =
        std::max(loss.backwardWorkspaceBytes, bytes[layout.backwardInputPeak(last)]);
  }
}

void checkBackwardSplit(const CompiledSchedule& compiled, const CostModel& costs, const Candidate& candidate) {
  if (compiled.splitsBackward && !costs.backwardSplit()) {
    throw std::invalid_argument(
        "the " + candidate.scheduleLabel() +
        " schedule splits each backward into input and weight gradients, and the profile has no such split (it "
        "was measured before zero-bubble schedules existed): profile the model again (pipeprof profile)");
  }
}

/// Sizes the slots and places each stage: its cluster device and its static bytes.
void placeStages(const CompiledSchedule& compiled, const CostModel& costs, const Candidate& candidate,
                 const std::vector<std::int64_t>& firstLayer, ResolvedCosts& out) {
  const SlotLayout& layout = compiled.layout;
  const std::int32_t n = layout.n;
  out.durationNs.assign(2 * static_cast<std::size_t>(layout.durationsPerClass()), 0);
  out.bytes.assign(2 * static_cast<std::size_t>(layout.bytesPerClass()), 0);
  out.staticBytes.resize(static_cast<std::size_t>(n));
  out.stageDevice.resize(static_cast<std::size_t>(n));
  const Bytes workspaces = costs.libraryWorkspaceBytes(compiled.training);
  for (std::int32_t j = 0; j < n; ++j) {
    out.stageDevice[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(candidate.deviceOf(j));
    out.staticBytes[static_cast<std::size_t>(j)] =
        costs.staticBytes(firstLayer[static_cast<std::size_t>(j)], firstLayer[static_cast<std::size_t>(j) + 1]) +
        workspaces;
  }
}

/// What resolveCosts' steps share: its inputs, and the placed stages in `out`.
struct CostResolution {
  const CompiledSchedule& compiled;
  CostModel& costs;
  const Cluster& cluster;
  const std::vector<std::int64_t>& firstLayer;
  /// Per stage j, the skip its last layer passes on as j's output, or -1 (skipsPassedOn).
  const std::vector<std::int32_t>& passedOn;
  ResolvedCosts& out;
  const bool sharedLinks;

  std::int32_t deviceOf(std::int32_t j) const { return out.stageDevice[static_cast<std::size_t>(j)]; }
  // Stages whose tensors the other uses as they are (one device, or one host's memory; with
  // one process per device, one rank).
  bool sharesTensors(std::int32_t a, std::int32_t b) const {
    if (cluster.processPerDevice) {
      return compiled.stageLane[static_cast<std::size_t>(a)] == compiled.stageLane[static_cast<std::size_t>(b)];
    }
    return deviceOf(a) == deviceOf(b) || isZeroCostLink(cluster.link(deviceOf(a), deviceOf(b)));
  }
  // Transfer time (with shared links its latency part in copyLatencyNs) and destination buffer
  // (a tensor of `bytes`, counted as the cost model counts tensors) of `bytes` moved from
  // stage a to stage b.
  void transfer(std::int32_t a, std::int32_t b, Bytes bytes, std::int32_t durationSlot, Bytes& bufferBytes) const {
    TimeNs& timeNs = out.durationNs[static_cast<std::size_t>(durationSlot)];
    if (sharesTensors(a, b)) {
      timeNs = 0;
      bufferBytes = 0;
      return;
    }
    const Link& link = cluster.link(deviceOf(a), deviceOf(b));
    timeNs = link.transferNs(bytes);
    bufferBytes = costs.tensorBytes(bytes);
    if (sharedLinks) out.copyLatencyNs[static_cast<std::size_t>(durationSlot)] = timeNs > 0 ? link.latencyNs : 0;
  }
};

/// One size class: its micro-batch size, its layers' costs, and its slots in `out`.
struct SizeClassSlots {
  std::int64_t size;
  const LayerCostTable& table;
  const SkipGradientBytes& skipGradients;
  std::int32_t classSlot;
  TimeNs* duration;
  Bytes* bytes;
};

/// The skips stage j stashes for later stages, as roots of its backward: the skip is the
/// stash layer's input, the output of the layer before, whose saved part (that layer saved it,
/// a ReLU its result) stays until the backward ends. Not a skip stashed by j's first layer (j's
/// input, held by j - 1) nor one j passes on as its output (kept as the output).
std::vector<StashedRoot> stashedRoots(const CostResolution& r, const LayerCostTable& table, std::int32_t j,
                                      std::size_t first) {
  std::vector<StashedRoot> roots;
  const std::vector<SkipProfile>& skips = r.costs.profile().skips;
  for (std::int32_t s = 0; s < r.compiled.layout.skips; ++s) {
    const auto k = static_cast<std::size_t>(s);
    if (r.compiled.skipStashStage[k] != j || r.compiled.skipPopStage[k] == j) continue;
    if (!r.passedOn.empty() && r.passedOn[static_cast<std::size_t>(j)] == s) continue;
    const auto stash = static_cast<std::size_t>(skips[k].stashLayer);
    if (stash <= first) continue;
    roots.push_back({stash - 1, table.outputSavedBytes[stash - 1]});
  }
  return roots;
}

/// Stage j's durations, its bytes and transient peaks, and the copies to and from j + 1.
void resolveStage(const CostResolution& r, const SizeClassSlots& c, std::int32_t j) {
  const SlotLayout& layout = r.compiled.layout;
  const std::int32_t n = layout.n;
  const LayerCostTable& table = c.table;
  TimeNs* duration = c.duration;
  Bytes* bytes = c.bytes;
  const auto first = static_cast<std::size_t>(r.firstLayer[static_cast<std::size_t>(j)]);
  const auto end = static_cast<std::size_t>(r.firstLayer[static_cast<std::size_t>(j) + 1]);
  const double speed = r.cluster.devices[static_cast<std::size_t>(r.deviceOf(j))].relativeSpeed;
  duration[layout.forwardNs(j)] = scaleTime(table.forwardPrefix[end] - table.forwardPrefix[first], speed);
  duration[layout.forwardNoGradNs(j)] =
      scaleTime(table.forwardNoGradPrefix[end] - table.forwardNoGradPrefix[first], speed);
  duration[layout.backwardNs(j)] = scaleTime(table.backwardPrefix[end] - table.backwardPrefix[first], speed);
  bytes[layout.saved(j)] = table.savedPrefix[end] - table.savedPrefix[first];
  if (r.compiled.splitsBackward) {
    const SplitTimes times =
        stageSplitTimes(j, scaleTime(table.backwardInputPrefix[end] - table.backwardInputPrefix[first], speed),
                        scaleTime(table.backwardWeightPrefix[end] - table.backwardWeightPrefix[first], speed),
                        duration[layout.backwardNs(j)]);
    duration[layout.backwardInputNs(j)] = times.inputNs;
    duration[layout.backwardWeightNs(j)] = times.weightNs;
    resolveSplitBytes(layout, table, first, end, firstInputUser(r.costs, first, end), j,
                      j > 0 && r.sharesTensors(j - 1, j), j + 1 < n && r.sharesTensors(j, j + 1), bytes);
  }
  bytes[layout.output(j)] = table.outputBytes[end - 1];
  // The stage's output lives until backward(i, j); the part of it the last layer's saved
  // bytes hold (its own graph saved it, or a later layer saved it as its input) is counted.
  // A last layer that passes on what it stashes allocated nothing: its output is its input,
  // the previous layer's output (or the stage's input, held by j - 1 already).
  const bool passesOn = !r.passedOn.empty() && r.passedOn[static_cast<std::size_t>(j)] >= 0;
  const std::size_t allocating = passesOn ? end - 2 : end - 1;
  bytes[layout.unsavedOutput(j)] = passesOn && end - 1 == first ? 0 : table.unsavedOutputBytes(allocating);
  // In training a skip popped here from another stage is a leaf: its gradient is made
  // by the popping layer's backward (skip_gradient_bytes.h says what its walk holds of it).
  // (No call for a profile without skips: the search walks every layer of every candidate.)
  auto heldSkipGradients = [&](std::size_t l, bool input) {
    return layout.skips == 0 ? Bytes{0} : c.skipGradients.heldAt(j, l, input);
  };
  const TransientPeaks peaks = transientPeaks(table, first, end, j + 1 < n, r.compiled.splitsBackward, j > 0,
                                              stashedRoots(r, table, j, first), heldSkipGradients);
  bytes[layout.gradForwardPeak(j)] = peaks.gradForwardLate ? 0 : peaks.gradForward;
  bytes[layout.gradForwardPeakAtEnd(j)] = peaks.gradForwardLate ? peaks.gradForward : 0;
  bytes[layout.noGradForwardPeak(j)] = peaks.noGradForward;
  bytes[layout.backwardPeak(j)] = peaks.backward;
  bytes[layout.backwardInputPeak(j)] = peaks.backwardInput;
  bytes[layout.backwardPeakAtEnd(j)] = peaks.backwardAtEnd;
  bytes[layout.backwardInputPeakAtEnd(j)] = peaks.backwardInputAtEnd;
  if (r.compiled.splitsBackward) bytes[layout.checkpointedWeightBackwardPeak(j)] = bytes[layout.weightBackwardPeak(j)];
  if (r.compiled.splitsBackward && j == 0) {  // W is all of the backward
    // Its I dropped the skips it stashed; a rank keeps what it sent (resolveFirstStageWeightPeak:
    // the output too, unless freed).
    bytes[layout.weightBackwardPeak(j)] = r.cluster.processPerDevice ? peaks.backward : peaks.backwardRootsFreed;
    bytes[layout.checkpointedWeightBackwardPeak(j)] = peaks.backwardOutputFreed;
  }
  if (j + 1 < n) {
    const Bytes boundary = table.outputMovedBytes[end - 1];
    r.transfer(j, j + 1, boundary, c.classSlot + layout.copyNs(j, false), bytes[layout.copyBytes(j, false)]);
    r.transfer(j + 1, j, boundary, c.classSlot + layout.copyNs(j, true), bytes[layout.copyBytes(j, true)]);
  }
}

/// The first stage's W runs its whole backward after its I let the output go: the output's last
/// user in the graph frees it on the way, as for a checkpointed micro-batch, unless stage 1
/// holds that very tensor for its own W or a rank keeps what it sent (unet zb1p [14,5], stage 1
/// opening with an upsampling: 512 KiB below the whole backward's peak; [12,7], opening with a
/// convolution: at it).
void resolveFirstStageWeightPeak(const CostResolution& r, Bytes* bytes) {
  const SlotLayout& layout = r.compiled.layout;
  if (!r.compiled.splitsBackward || layout.n < 2 || r.cluster.processPerDevice) return;
  if (bytes[layout.inputHeldForWeight(1)] == 0) {
    bytes[layout.weightBackwardPeak(0)] = bytes[layout.checkpointedWeightBackwardPeak(0)];
  }
}

/// I frees a tensor crossing between stages but the part W keeps of it, which moves to
/// W's count at once (the slots' comments in compiled_schedule.h).
void resolveSplitHandOver(const CompiledSchedule& compiled, Bytes* bytes) {
  const SlotLayout& layout = compiled.layout;
  for (std::int32_t j = 0; compiled.splitsBackward && j + 1 < layout.n; ++j) {
    bytes[layout.outputGradientFreedByInput(j)] =
        std::max<Bytes>(0, bytes[layout.output(j)] - bytes[layout.gradientHeldOnSender(j)]);
    bytes[layout.gradientCopyFreedByInput(j)] =
        std::max<Bytes>(0, bytes[layout.copyBytes(j, true)] - bytes[layout.gradientHeldOnReceiver(j)]);
    bytes[layout.inputCopyFreedByInput(j + 1)] =
        std::max<Bytes>(0, bytes[layout.copyBytes(j, false)] - bytes[layout.inputCopyHeldForWeight(j + 1)]);
  }
}

/// Skip s's bytes, its gradient's, and its copies between the stash and the pop stage.
void resolveSkip(const CostResolution& r, const SizeClassSlots& c, std::int32_t s) {
  const SlotLayout& layout = r.compiled.layout;
  const Profile& profile = r.costs.profile();
  Bytes* bytes = c.bytes;
  const Bytes skip = profile.skips[static_cast<std::size_t>(s)].bytesPerSample * c.size;
  const std::int32_t stash = r.compiled.skipStashStage[static_cast<std::size_t>(s)];
  const std::int32_t pop = r.compiled.skipPopStage[static_cast<std::size_t>(s)];
  bytes[layout.skipBytes(s)] = r.costs.tensorBytes(skip);
  bytes[layout.skipGradBytes(s)] = r.costs.tensorBytes(skip) - c.skipGradients.sharedInBackward(s, /*atInput=*/true);
  bytes[layout.skipGradSharedBytes(s)] = c.skipGradients.sharedWithInput(s);
  bytes[layout.skipGradUnsharedBytes(s)] = r.costs.tensorBytes(skip) - bytes[layout.skipGradSharedBytes(s)];
  bytes[layout.skipUnsavedBytes(s)] =
      r.costs.tensorBytes(profile.skips[static_cast<std::size_t>(s)].unsavedBytesPerSample * c.size);
  if (r.passedOn[static_cast<std::size_t>(stash)] == s) {
    // The skip is the stash stage's output. In training that output outlives the skip's
    // hold (kept until backward(i, stash + 1), or until backward(i, stash) as U): the skip
    // adds nothing. Not training, the skip outlives the output (kept until forward(i, stash
    // + 1)): the output adds nothing.
    if (r.compiled.training) {
      bytes[layout.skipBytes(s)] = 0;
      bytes[layout.skipUnsavedBytes(s)] = 0;
    } else {
      bytes[layout.output(stash)] = 0;
    }
  }
  // A stash layer that opens its stage and passes its input on stashes the stage's
  // input, which the stage keeps until its backward (for a recompute, or as the graph's
  // leaf), after the pop's: in training the skip adds nothing. (With one process per device
  // a send to another rank keeps it past that backward; it is counted there.)
  const SkipProfile& skipProfile = profile.skips[static_cast<std::size_t>(s)];
  const bool opensStage = stash > 0 && skipProfile.stashLayer == r.firstLayer[static_cast<std::size_t>(stash)] &&
                          r.costs.stashReturnsItsInput()[static_cast<std::size_t>(s)];
  if (r.compiled.training && opensStage && (!r.cluster.processPerDevice || r.sharesTensors(stash, pop))) {
    bytes[layout.skipBytes(s)] = 0;
    bytes[layout.skipUnsavedBytes(s)] = 0;
  }
  r.transfer(stash, pop, skip, c.classSlot + layout.skipCopyNs(s, false), bytes[layout.skipCopyBytes(s, false)]);
  r.transfer(pop, stash, skip, c.classSlot + layout.skipCopyNs(s, true), bytes[layout.skipCopyBytes(s, true)]);
}

/// One process per device: a backward frees its stage's saved bytes less what the sends
/// keep (sentSaved): the part of an output sent to another rank its saved bytes hold, and the
/// part of a skip sent to another rank the stash stage's graph saved (its next layer took
/// it as its input). Threads never read these slots.
void resolveSentSaved(const CostResolution& r, Bytes* bytes) {
  const SlotLayout& layout = r.compiled.layout;
  const std::int32_t n = layout.n;
  for (std::int32_t j = 0; j + 1 < n; ++j) {
    if (!r.sharesTensors(j, j + 1))
      bytes[layout.sentSaved(j)] = std::max<Bytes>(0, bytes[layout.output(j)] - bytes[layout.unsavedOutput(j)]);
  }
  for (std::int32_t s = 0; s < layout.skips; ++s) {
    const std::int32_t stash = r.compiled.skipStashStage[static_cast<std::size_t>(s)];
    if (!r.sharesTensors(stash, r.compiled.skipPopStage[static_cast<std::size_t>(s)]))
      bytes[layout.sentSaved(stash)] += bytes[layout.skipBytes(s)] - bytes[layout.skipUnsavedBytes(s)];
  }
  for (std::int32_t j = 0; j < n; ++j) {
    const Bytes sent = std::min(bytes[layout.sentSaved(j)], bytes[layout.saved(j)]);
    bytes[layout.sentSaved(j)] = sent;
    bytes[layout.savedUnsent(j)] = bytes[layout.saved(j)] - sent;
    const Bytes sentFreedByInput = std::min(sent, bytes[layout.savedFreedByInput(j)]);
    bytes[layout.savedFreedByInputUnsent(j)] = bytes[layout.savedFreedByInput(j)] - sentFreedByInput;
    bytes[layout.weightSavedUnsent(j)] = std::max<Bytes>(0, bytes[layout.weightSaved(j)] - (sent - sentFreedByInput));
  }
}

/// The durations and bytes of one size class (0: a full micro-batch, 1: the last one).
void resolveSizeClass(const CostResolution& r, const MicroBatching& batching, int sizeClass) {
  const SlotLayout& layout = r.compiled.layout;
  const std::int64_t size = sizeClass == 0 ? batching.chunkSize : batching.lastSize;
  const LayerCostTable& table = r.costs.table(size);
  const SkipGradientBytes skipGradients(r.compiled, r.costs, table, r.firstLayer, size);
  const SizeClassSlots slots{size,
                             table,
                             skipGradients,
                             sizeClass * layout.durationsPerClass(),
                             r.out.durationNs.data() + sizeClass * layout.durationsPerClass(),
                             r.out.bytes.data() + sizeClass * layout.bytesPerClass()};
  for (std::int32_t j = 0; j < layout.n; ++j) resolveStage(r, slots, j);
  resolveSplitHandOver(r.compiled, slots.bytes);
  resolveFirstStageWeightPeak(r, slots.bytes);
  for (std::int32_t s = 0; s < layout.skips; ++s) resolveSkip(r, slots, s);
  if (r.cluster.processPerDevice) resolveSentSaved(r, slots.bytes);
}

}  // namespace

void resolveCosts(const CompiledSchedule& compiled, CostModel& costs, const Cluster& cluster,
                  const Candidate& candidate, const MicroBatching& batching,
                  const std::vector<std::int64_t>& firstLayer, ResolvedCosts& out) {
  checkBackwardSplit(compiled, costs, candidate);
  placeStages(compiled, costs, candidate, firstLayer, out);
  out.deviceHost = hostIndices(cluster);
  out.wakeLatencyNs = cluster.wakeLatencyNs;
  const bool shared = out.sharedLinks();
  if (shared) {
    out.copyLatencyNs.assign(out.durationNs.size(), 0);
  } else {
    out.copyLatencyNs.clear();
  }
  const std::vector<std::int32_t> passedOn = skipsPassedOn(compiled, costs, firstLayer);
  const CostResolution resolution{compiled, costs, cluster, firstLayer, passedOn, out, shared};
  for (int sizeClass = 0; sizeClass < 2; ++sizeClass) resolveSizeClass(resolution, batching, sizeClass);
  if (costs.launches()) {
    resolveLaunches(compiled, costs, cluster, batching, firstLayer, out);
  } else {
    out.launchNs.clear();
    out.kernels.clear();
  }
  addLossCosts(compiled, costs, cluster, batching, out);
  addColdCacheCosts(compiled, costs.profile(), batching, out);
}

}  // namespace pipeprof::sim
