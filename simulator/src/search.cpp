// search(): enumerate schedules x v x balances x chunks x checkpoint modes, simulate each, rank those that fit.
#include <pipeprof/simulator/search.h>

#include "balance.h"
#include "candidate_simulator.h"
#include "cost_model.h"

#include <pipeprof/core/units.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

namespace pipeprof {
namespace {

/// A schedule family with its stages per device: the outer loops of the search.
struct ScheduleShape {
  ScheduleKind kind = ScheduleKind::GPipe;
  std::int64_t v = 1;
};

std::string joined(const std::vector<std::int64_t>& values) {
  std::string text;
  for (std::size_t k = 0; k < values.size(); ++k) text += (k > 0 ? "," : "") + std::to_string(values[k]);
  return text;
}

/// Each family with the v it runs (stagesPerDeviceChoices: gpipe, 1f1b and zb1p 1, zbv 2,
/// interleaved and interleaved-zb every v >= 2 of the space), in the tie order (kScheduleKinds'
/// order, then increasing v).
std::vector<ScheduleShape> scheduleShapes(const SearchSpace& space) {
  std::vector<ScheduleKind> kinds = space.schedules;
  std::sort(kinds.begin(), kinds.end());
  kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
  std::vector<ScheduleShape> shapes;
  for (ScheduleKind kind : kinds) {
    for (std::int64_t v : stagesPerDeviceChoices(kind, space.stagesPerDevice)) shapes.push_back({kind, v});
  }
  return shapes;
}

void validateSpace(const Profile& profile, const Cluster& cluster, const SearchSpace& space) {
  if (space.batch < 1)
    throw std::invalid_argument("search: batch must be positive, got " + std::to_string(space.batch));
  if (space.devices < 1) {
    throw std::invalid_argument("search: pipeline devices must be positive, got " + std::to_string(space.devices));
  }
  if (space.devices > profile.layerCount()) {
    throw std::invalid_argument("search: " + std::to_string(space.devices) +
                                " pipeline devices need at least as many layers; the profile has " +
                                std::to_string(profile.layerCount()));
  }
  if (space.devices > cluster.deviceCount()) {
    throw std::invalid_argument("search: " + std::to_string(space.devices) + " pipeline devices need " +
                                std::to_string(space.devices) +
                                " cluster devices (pipeline device d on cluster device d); the cluster has " +
                                std::to_string(cluster.deviceCount()));
  }
  if (space.schedules.empty()) {
    throw std::invalid_argument("search: no schedules to try; give at least one of gpipe, 1f1b, interleaved");
  }
  for (std::int64_t v : space.stagesPerDevice) {
    if (v < 1) {
      throw std::invalid_argument("search: stages per device must be positive, got " + std::to_string(v) +
                                  " (stages per device: " + joined(space.stagesPerDevice) + ")");
    }
  }
  if (space.chunks.empty()) throw std::invalid_argument("search: no chunk counts to try; give at least one");
  for (std::int64_t chunks : space.chunks) {
    if (chunks < 1) throw std::invalid_argument("search: chunks must be positive, got " + std::to_string(chunks));
  }
  if (space.modes.empty()) throw std::invalid_argument("search: no checkpoint modes to try; give at least one");
  if (space.enumeration == BalanceEnumeration::Given) {
    if (space.balances.empty()) throw std::invalid_argument("search: enumeration Given needs at least one balance");
    // Every given balance must have p * v stages for a v the space tries.
    std::vector<std::int64_t> stageCounts;
    for (const ScheduleShape& shape : scheduleShapes(space)) stageCounts.push_back(space.devices * shape.v);
    for (const auto& balance : space.balances) {
      const auto n = static_cast<std::int64_t>(balance.size());
      if (std::find(stageCounts.begin(), stageCounts.end(), n) == stageCounts.end()) {
        throw std::invalid_argument("search: balance " + formatBalance(balance) + " has " + std::to_string(n) +
                                    " stages but the space asks for " + joined(stageCounts) + " (" +
                                    std::to_string(space.devices) + " devices x the stages per device tried)");
      }
    }
  }
}

template <typename T>
std::vector<T> sortedUnique(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

bool rankedBefore(const RankedCandidate& a, const RankedCandidate& b) {
  if (a.prediction.samplesPerS != b.prediction.samplesPerS) return a.prediction.samplesPerS > b.prediction.samplesPerS;
  return std::tie(a.candidate.chunks, a.candidate.checkpoint, a.candidate.schedule, a.candidate.stagesPerDevice,
                  a.candidate.balance) < std::tie(b.candidate.chunks, b.candidate.checkpoint, b.candidate.schedule,
                                                  b.candidate.stagesPerDevice, b.candidate.balance);
}

}  // namespace

std::vector<double> layerTimesNs(const Profile& profile, std::int64_t microBatch) {
  std::vector<double> times;
  times.reserve(profile.layers.size());
  for (const LayerProfile& layer : profile.layers) {
    const CostSample cost = layer.costAt(microBatch);
    times.push_back(static_cast<double>(cost.forwardNs + cost.backwardNs));
  }
  return times;
}

std::string rejectionReason(const Cluster& cluster, const std::vector<Bytes>& devicePeakBytes) {
  std::string reason;
  for (std::size_t d = 0; d < devicePeakBytes.size() && d < cluster.devices.size(); ++d) {
    const auto& capacity = cluster.devices[d].memoryBytes;
    if (!capacity || devicePeakBytes[d] <= *capacity) continue;
    if (!reason.empty()) reason += "; ";
    reason += "predicted peak " + formatBytes(devicePeakBytes[d]) + " > " + formatBytes(*capacity) + " on device " +
              std::to_string(d);
  }
  return reason;
}

std::vector<Bytes> clusterPeakBytes(const Candidate& candidate, const Prediction& prediction,
                                    std::int64_t clusterDevices) {
  std::vector<Bytes> peaks(static_cast<std::size_t>(std::max<std::int64_t>(0, clusterDevices)), 0);
  for (std::size_t d = 0; d < prediction.peakBytes.size(); ++d) {
    const auto device = static_cast<std::size_t>(candidate.deviceOf(static_cast<std::int64_t>(d)));
    if (device < peaks.size()) peaks[device] += prediction.peakBytes[d];
  }
  return peaks;
}

std::vector<std::vector<std::int64_t>> enumerateBalances(const Profile& profile, const Cluster& cluster,
                                                         const SearchSpace& space, std::int64_t stagesPerDevice,
                                                         StagePlacement placement) {
  validateSpace(profile, cluster, space);
  if (stagesPerDevice < 1) {
    throw std::invalid_argument("search: stages per device must be positive, got " + std::to_string(stagesPerDevice));
  }
  const std::int64_t layers = profile.layerCount();
  const std::int64_t p = space.devices;
  const std::int64_t n = p * stagesPerDevice;
  if (n > layers) {
    throw std::invalid_argument("search: " + std::to_string(n) + " stages (" + std::to_string(p) + " devices x " +
                                std::to_string(stagesPerDevice) +
                                " stages per device) need at least as many layers; the profile has " +
                                std::to_string(layers));
  }
  std::vector<sim::Balance> balances;
  switch (space.enumeration) {
    case BalanceEnumeration::Given:
      for (const auto& balance : space.balances) {
        if (static_cast<std::int64_t>(balance.size()) != n) continue;  // for another v
        // The balance alone is checked: a shape every v can schedule (p micro-batches).
        Candidate probe;
        probe.balance = balance;
        probe.schedule = stagesPerDevice > 1 ? ScheduleKind::Interleaved : ScheduleKind::GPipe;
        probe.stagesPerDevice = stagesPerDevice;
        probe.batch = p;
        probe.chunks = p;
        sim::validateCandidate(profile, cluster, probe);
        balances.push_back(balance);
      }
      break;
    case BalanceEnumeration::All: balances = sim::allCompositions(layers, n); break;
    case BalanceEnumeration::Auto: {
      if (countBalances(layers, n) <= space.maxExhaustiveBalances) {
        balances = sim::allCompositions(layers, n);
        break;
      }
      // Stage j runs on pipeline device deviceOfStage(j), which is that cluster device.
      std::vector<double> speeds;
      for (std::int64_t j = 0; j < n; ++j) {
        speeds.push_back(cluster.devices[static_cast<std::size_t>(placedDevice(placement, j, p))].relativeSpeed);
      }
      std::vector<std::int64_t> sizes;
      for (std::int64_t chunks : space.chunks) sizes.push_back(microBatching(space.batch, chunks).chunkSize);
      for (std::int64_t size : sortedUnique(sizes)) {
        const sim::Balance base = sim::minBottleneckWithSpeeds(layerTimesNs(profile, size), speeds);
        auto near = sim::boundaryNeighbours(base);
        balances.push_back(base);
        balances.insert(balances.end(), near.begin(), near.end());
      }
      balances.push_back(balanceByTime(layerTimesNs(profile, space.batch), n));
      break;
    }
  }
  sim::sortUnique(balances);
  return balances;
}

SearchResult search(const Profile& profile, const Cluster& cluster, const SearchSpace& space,
                    const SearchProgress& progress) {
  return search(
      [&](ScheduleKind, std::int64_t, Checkpoint) {
        return ShapeInputs{&profile, &cluster};
      },
      space, progress);
}

namespace {

/// With an older profile (no I/W times to simulate zero bubble with), the zero-bubble families
/// leave `shapes`; returns them, each once, in their order there.
std::vector<ScheduleKind> leaveOutUnsplitZeroBubble(const Profile& profile, std::vector<ScheduleShape>& shapes) {
  std::vector<ScheduleKind> leftOut;
  if (profile.hasBackwardSplit()) return leftOut;
  for (const ScheduleShape& shape : shapes) {
    if (splitsBackward(shape.kind) && std::find(leftOut.begin(), leftOut.end(), shape.kind) == leftOut.end()) {
      leftOut.push_back(shape.kind);
    }
  }
  shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                              [](const ScheduleShape& shape) { return splitsBackward(shape.kind); }),
               shapes.end());
  if (shapes.empty()) {
    throw std::invalid_argument(
        "search: the zero-bubble schedules need each layer's backward split into input and weight gradients, "
        "which the profile has not measured (it predates them): profile the model again (pipeprof profile)");
  }
  return leftOut;
}

/// A shape's inputs in `mode`, checked to have gpipe's layers and devices.
ShapeInputs checkedInputs(const InputsByShape& inputs, const ShapeInputs& base, const ScheduleShape& shape,
                          Checkpoint mode) {
  const ShapeInputs shapeInputs = inputs(shape.kind, shape.v, mode);
  if (shapeInputs.profile->layerCount() != base.profile->layerCount() ||
      shapeInputs.cluster->deviceCount() != base.cluster->deviceCount()) {
    throw std::invalid_argument("search: the inputs of " + scheduleLabel(shape.kind, shape.v) + " " +
                                std::string(checkpointName(mode)) + " have other layers or devices than gpipe's");
  }
  return shapeInputs;
}

/// Per shape, its inputs per mode and its balances (v, from its inputs without checkpoints);
/// `total`: the candidates to decide, a shape with more stages than layers one rejection.
struct ShapePlan {
  std::vector<std::vector<ShapeInputs>> modeInputs;
  std::vector<std::vector<sim::Balance>> balances;
  std::int64_t total = 0;
};

ShapePlan planShapes(const InputsByShape& inputs, const ShapeInputs& base, const SearchSpace& space,
                     const std::vector<ScheduleShape>& shapes, const std::vector<Checkpoint>& modes,
                     std::size_t chunkCount) {
  const std::int64_t layers = base.profile->layerCount();
  ShapePlan plan;
  plan.modeInputs.resize(shapes.size());
  plan.balances.resize(shapes.size());
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    for (const Checkpoint mode : modes) plan.modeInputs[s].push_back(checkedInputs(inputs, base, shapes[s], mode));
    if (space.devices * shapes[s].v > layers) {
      ++plan.total;
      continue;
    }
    const ShapeInputs balanceInputs = checkedInputs(inputs, base, shapes[s], Checkpoint::Never);
    plan.balances[s] = enumerateBalances(*balanceInputs.profile, *balanceInputs.cluster, space, shapes[s].v,
                                         stagePlacement(shapes[s].kind));
    plan.total += static_cast<std::int64_t>(plan.balances[s].size() * chunkCount * modes.size());
  }
  return plan;
}

/// Profile-level checks (skip layers, cost samples) once; every enumerated balance is valid.
void validateProfileOnce(const ShapeInputs& base, const SearchSpace& space) {
  const std::int64_t layers = base.profile->layerCount();
  const std::int64_t p = space.devices;
  Candidate probe;
  probe.balance.assign(static_cast<std::size_t>(p), 1);
  probe.balance.front() += layers - p;
  probe.batch = space.batch;
  sim::validateCandidate(*base.profile, *base.cluster, probe);
}

/// The candidates of the planned shapes in search order, each decided (simulated and ranked,
/// or rejected) into `result`, with progress reported and the caller's cancel obeyed.
class CandidateLoop {
 public:
  CandidateLoop(const SearchSpace& space, const SearchProgress& progress, const std::vector<ScheduleShape>& shapes,
                const ShapePlan& plan, const std::vector<std::int64_t>& chunkList, const std::vector<Checkpoint>& modes,
                std::int64_t layers, SearchResult& result)
      : space_(space),
        progress_(progress),
        shapes_(shapes),
        plan_(plan),
        chunkList_(chunkList),
        modes_(modes),
        layers_(layers),
        result_(result) {
    candidate_.batch = space.batch;
  }

  /// Reports the start; false when the caller cancelled.
  bool start() {
    if (progress_ && !progress_(0, plan_.total)) result_.cancelled = true;
    return !result_.cancelled;
  }
  /// Decides the candidates of shape s.
  void searchShape(std::size_t s);

 private:
  static constexpr std::int64_t kProgressEvery = 256;
  /// Counts one decided candidate; false when the caller cancelled.
  bool advance() {
    ++result_.evaluated;
    if (progress_ && (result_.evaluated % kProgressEvery == 0 || result_.evaluated == plan_.total) &&
        !progress_(result_.evaluated, plan_.total)) {
      result_.cancelled = true;
    }
    return !result_.cancelled;
  }
  /// A shape with more stages than layers: one rejection.
  void rejectTooManyStages(const ScheduleShape& shape, std::int64_t n);
  /// candidate_: rejected with shapeError when there is one, else simulated and ranked (or
  /// rejected with the devices it does not fit on, of `cluster`).
  void decide(ScheduleKind kind, const std::string& shapeError, sim::CandidateSimulator& simulator,
              const Cluster& cluster);

  const SearchSpace& space_;
  const SearchProgress& progress_;
  const std::vector<ScheduleShape>& shapes_;
  const ShapePlan& plan_;
  const std::vector<std::int64_t>& chunkList_;
  const std::vector<Checkpoint>& modes_;
  const std::int64_t layers_;
  SearchResult& result_;
  SimulationResult simulated_;
  Candidate candidate_;
};

void CandidateLoop::searchShape(std::size_t s) {
  const ScheduleShape& shape = shapes_[s];
  std::vector<std::unique_ptr<sim::CandidateSimulator>> simulators;  // one per mode
  for (const ShapeInputs& modeInput : plan_.modeInputs[s]) {
    simulators.push_back(std::make_unique<sim::CandidateSimulator>(*modeInput.profile, *modeInput.cluster));
  }
  const std::int64_t n = space_.devices * shape.v;
  candidate_.schedule = shape.kind;
  candidate_.stagesPerDevice = shape.v;
  candidate_.deferredWeights.clear();
  if (n > layers_) {
    rejectTooManyStages(shape, n);
    return;
  }
  for (std::int64_t chunks : chunkList_) {
    // The shape depends on the micro-batches that exist, not on the chunks asked for.
    const std::string shapeError =
        scheduleShapeError(shape.kind, shape.v, n, microBatching(space_.batch, chunks).count);
    for (std::size_t k = 0; k < modes_.size(); ++k) {
      const Checkpoint mode = modes_[k];
      sim::CandidateSimulator& simulator = *simulators[k];
      for (const sim::Balance& balance : plan_.balances[s]) {
        candidate_.balance = balance;
        candidate_.chunks = chunks;
        candidate_.checkpoint = mode;
        decide(shape.kind, shapeError, simulator, *plan_.modeInputs[s][k].cluster);
        if (!advance()) break;
      }
      if (result_.cancelled) break;
    }
    if (result_.cancelled) break;
  }
}

void CandidateLoop::rejectTooManyStages(const ScheduleShape& shape, std::int64_t n) {
  const std::int64_t p = space_.devices;
  RankedCandidate ranked;
  ranked.candidate = candidate_;
  ranked.candidate.balance.clear();
  ranked.candidate.chunks = chunkList_.front();
  ranked.candidate.checkpoint = modes_.front();
  ranked.prediction.fits = false;
  ranked.rejection = scheduleKindName(shape.kind) + " with " + std::to_string(shape.v) + " stages per device needs " +
                     std::to_string(n) + " stages (" + std::to_string(p) + " devices x " + std::to_string(shape.v) +
                     ") but the model has " + std::to_string(layers_) + " layers";
  result_.rejected.push_back(std::move(ranked));
  advance();
}

void CandidateLoop::decide(ScheduleKind kind, const std::string& shapeError, sim::CandidateSimulator& simulator,
                           const Cluster& cluster) {
  RankedCandidate ranked;
  ranked.candidate = candidate_;
  if (!shapeError.empty()) {
    ranked.prediction.fits = false;
    ranked.rejection = shapeError;
    result_.rejected.push_back(std::move(ranked));
    return;
  }
  // zb1p defers no more W's than keep each device within 1F1B's memory.
  if (kind == ScheduleKind::ZeroBubble) {
    candidate_.deferredWeights = simulator.deferralWithinOneFOneBMemory(candidate_);
    ranked.candidate.deferredWeights = candidate_.deferredWeights;
  }
  simulator.simulate(candidate_, true, false, /*latePeaks=*/false, simulated_);
  ranked.prediction = simulated_.prediction;
  result_.simulatedEvents += simulated_.eventCount;
  if (ranked.prediction.fits) {
    result_.ranked.push_back(std::move(ranked));
  } else {
    ranked.rejection = rejectionReason(cluster, simulator.devicePeakBytes());
    result_.rejected.push_back(std::move(ranked));
  }
}

}  // namespace

SearchResult search(const InputsByShape& inputs, const SearchSpace& space, const SearchProgress& progress) {
  const ShapeInputs base = inputs(ScheduleKind::GPipe, 1, Checkpoint::Never);
  validateSpace(*base.profile, *base.cluster, space);
  std::vector<ScheduleShape> shapes = scheduleShapes(space);
  std::vector<ScheduleKind> leftOut = leaveOutUnsplitZeroBubble(*base.profile, shapes);
  const std::vector<std::int64_t> chunkList = sortedUnique(space.chunks);
  const std::vector<Checkpoint> modes = sortedUnique(space.modes);
  const ShapePlan plan = planShapes(inputs, base, space, shapes, modes, chunkList.size());
  validateProfileOnce(base, space);

  SearchResult result;
  result.leftOut = std::move(leftOut);
  result.ranked.reserve(static_cast<std::size_t>(plan.total));
  CandidateLoop loop(space, progress, shapes, plan, chunkList, modes, base.profile->layerCount(), result);
  if (!loop.start()) return result;
  for (std::size_t s = 0; s < shapes.size() && !result.cancelled; ++s) loop.searchShape(s);
  std::sort(result.ranked.begin(), result.ranked.end(), rankedBefore);
  return result;
}

std::vector<std::int64_t> stageCounts(const SearchSpace& space, std::int64_t devices) {
  std::vector<std::int64_t> counts;
  for (const ScheduleKind kind : space.schedules) {
    for (const std::int64_t v : stagesPerDeviceChoices(kind, space.stagesPerDevice)) counts.push_back(devices * v);
  }
  return sortedUnique(counts);
}

std::int64_t devicesOfGivenBalances(const SearchSpace& space) {
  if (space.enumeration != BalanceEnumeration::Given || space.balances.empty()) return 0;
  std::size_t shortest = space.balances.front().size();
  for (const auto& balance : space.balances) shortest = std::min(shortest, balance.size());
  const std::vector<std::int64_t> perDevice = stageCounts(space, 1);
  if (perDevice.empty()) return 1;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(shortest) / perDevice.front());
}

std::vector<RejectionGroup> groupRejections(const std::vector<RankedCandidate>& rejected) {
  std::map<std::string, RejectionGroup> groups;
  for (const RankedCandidate& candidate : rejected) {
    const std::vector<std::int64_t>& overflow = candidate.prediction.overflowDevices;
    std::string reason = "not schedulable: " + candidate.rejection;
    if (!overflow.empty()) {
      reason = overflow.size() == 1 ? "predicted not to fit on device " : "predicted not to fit on devices ";
      for (std::size_t k = 0; k < overflow.size(); ++k) reason += (k > 0 ? "," : "") + std::to_string(overflow[k]);
    }
    RejectionGroup& group = groups[reason];
    group.reason = reason;
    ++group.count;
    if (group.example == nullptr) group.example = &candidate;
  }
  std::vector<RejectionGroup> out;
  for (auto& [reason, group] : groups) out.push_back(group);
  std::stable_sort(out.begin(), out.end(),
                   [](const RejectionGroup& a, const RejectionGroup& b) { return a.count > b.count; });
  return out;
}

}  // namespace pipeprof
