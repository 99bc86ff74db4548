// The step breakdown: a walk over each device's spans, its idle stretches attributed along the
// op dependency graph, and a replay of that graph for the schedule's bubble. Where the trace
// holds the GPU's own records (CUPTI's kernels, memsets and copies, each attributed to its op
// by the "op" arg), an op is the device work attributed to it rather than the host's span of
// it: its kernels are its busy time, its end is its last kernel's, a copy's data moves while
// its copy records run, and a message between ranks moves from when both NCCL kernels for it
// (the receive's and the send's, attributed to "receive <copy>" and "send <copy>") ran.
#include <pipeprof/core/step_breakdown.h>

#include "matched_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

namespace pipeprof {
namespace {

using breakdown::MatchedTrace;
using breakdown::Message;
using breakdown::StepItem;
using breakdown::Window;

constexpr std::array<StepCategory, kStepCategories> kCategories = {
    StepCategory::Forward,       StepCategory::Recompute,      StepCategory::Loss,      StepCategory::Backward,
    StepCategory::BackwardInput, StepCategory::BackwardWeight, StepCategory::Optimizer, StepCategory::SharedGradients,
    StepCategory::Bubble,        StepCategory::Waiting,        StepCategory::Transfer,  StepCategory::Overhead};

std::string jsonKey(StepCategory category) {
  std::string key = stepCategoryName(category);
  std::replace(key.begin(), key.end(), '-', '_');
  return key + "_ns";
}

/// The instants that split an idle stretch before an op: until `producedNs` the device waited
/// for a peer's op, until `movingNs` for the data to be sent, until `arrivedNs` for it to move.
struct Readiness {
  TimeNs producedNs = 0;
  TimeNs movingNs = 0;
  TimeNs arrivedNs = 0;
};

/// Sums of one device's categories over its windows (bubble and waiting not yet split).
struct DeviceTotals {
  std::array<TimeNs, kStepCategories> ns{};
  std::int64_t windows = 0;
  std::map<OpKind, std::pair<TimeNs, std::int64_t>> byKind;  ///< compute time and count per op kind

  void add(StepCategory category, TimeNs durationNs) {
    if (durationNs > 0) ns[static_cast<std::size_t>(category)] += durationNs;
  }
};

class Walker {
 public:
  Walker(const Schedule& schedule, const MatchedTrace& matched) : schedule_(schedule), matched_(matched) {}

  /// Adds device d's window `step` to its totals.
  void walk(std::int64_t d, std::int64_t step, const Window& window, DeviceTotals& totals) const {
    const std::vector<StepItem> items = matched_.itemsOf(d, step);
    if (items.empty()) return;
    ++totals.windows;
    TimeNs frontierNs = window.startNs;
    std::set<OpIndex> counted;  // an op of several GPU records counts once for its kind's mean
    for (const StepItem& item : items) {
      const TimeNs startNs = std::clamp(item.span->startNs, window.startNs, window.endNs);
      const TimeNs endNs = std::clamp(item.span->endNs(), window.startNs, window.endNs);
      if (startNs > frontierNs) {
        attributeIdle(frontierNs, startNs, readinessFor(d, step, item, frontierNs), totals);
        frontierNs = startNs;
      }
      if (endNs > frontierNs) {
        totals.add(item.category, endNs - frontierNs);
        frontierNs = endNs;
      }
      if (item.op) {
        auto& [kindNs, count] = totals.byKind[schedule_.op(*item.op).kind];
        kindNs += item.span->durationNs;
        if (counted.insert(*item.op).second) ++count;
      }
    }
    if (window.endNs > frontierNs) attributeIdle(frontierNs, window.endNs, tailReadiness(step, frontierNs), totals);
  }

 private:
  /// [fromNs, toNs) split at the readiness instants (each clamped into it).
  static void attributeIdle(TimeNs fromNs, TimeNs toNs, const Readiness& ready, DeviceTotals& totals) {
    const TimeNs produced = std::clamp(ready.producedNs, fromNs, toNs);
    const TimeNs moving = std::clamp(std::max(ready.movingNs, ready.producedNs), fromNs, toNs);
    const TimeNs arrived = std::clamp(std::max({ready.arrivedNs, ready.movingNs, ready.producedNs}), fromNs, toNs);
    totals.add(StepCategory::Waiting, produced - fromNs);
    totals.add(StepCategory::Overhead, moving - produced);
    totals.add(StepCategory::Transfer, arrived - moving);
    totals.add(StepCategory::Overhead, toNs - arrived);
  }

  /// After the device's last op (or before the optimizer): the others' last op, then overhead.
  Readiness tailReadiness(std::int64_t step, TimeNs fromNs) const {
    const TimeNs lastNs = matched_.lastComputeEndNs(step).value_or(fromNs);
    return {lastNs, lastNs, lastNs};
  }

  Readiness readinessFor(std::int64_t d, std::int64_t step, const StepItem& item, TimeNs fromNs) const {
    if (!item.op) return tailReadiness(step, fromNs);
    std::optional<Readiness> latest;
    for (const OpIndex dep : schedule_.op(*item.op).deps) {
      const std::optional<Readiness> ready = readinessOf(d, step, dep);
      if (ready && (!latest || ready->arrivedNs > latest->arrivedNs)) latest = ready;
    }
    if (!latest) return {fromNs, fromNs, fromNs};
    return *latest;
  }

  /// When dependency `dep` of an op of device d was ready: a copy's producer, its data's start
  /// and arrival; an op of another device its end. An op of d itself ran before in d's order:
  /// nullopt, as for a dependency the trace lacks.
  std::optional<Readiness> readinessOf(std::int64_t d, std::int64_t step, OpIndex dep) const {
    const Op& op = schedule_.op(dep);
    if (!op.isCopy()) {
      const std::optional<Window> extent = matched_.extentOf(step, dep);
      if (!extent || matched_.deviceOfOp(dep) == d) return std::nullopt;
      return Readiness{extent->endNs, extent->endNs, extent->endNs};
    }
    std::optional<TimeNs> producedNs;
    for (const OpIndex producer : op.deps) {
      if (const std::optional<Window> extent = matched_.extentOf(step, producer)) {
        producedNs = std::max(producedNs.value_or(extent->endNs), extent->endNs);
      }
    }
    Readiness ready;
    if (const std::optional<Window> copy = matched_.extentOf(step, dep)) {
      // The copy's span, or on a GPU its copy records: the data moved while they ran.
      ready.movingNs = copy->startNs;
      ready.arrivedNs = copy->endNs;
    } else if (const std::optional<Message> message = matched_.message(step, dep)) {
      // A receive posted before its send waits for the sender; the data moves once both are there.
      const TimeNs postedNs = message->received.startNs;
      ready.movingNs = std::max(postedNs, message->sentNs.value_or(producedNs.value_or(postedNs)));
      ready.arrivedNs = message->received.endNs;
    } else {
      if (!producedNs) return std::nullopt;
      ready.movingNs = *producedNs;
      ready.arrivedNs = *producedNs;
    }
    ready.producedNs = std::min(producedNs.value_or(ready.movingNs), ready.movingNs);
    return ready;
  }

  const Schedule& schedule_;
  const MatchedTrace& matched_;
};

/// When the op another device ran for `op` of device d ended, in step `step`: the latest end over
/// op's dependencies run by another device, directly or through a copy (nullopt: none traced).
std::optional<TimeNs> producedElsewhereNs(const Schedule& schedule, const MatchedTrace& matched, std::int64_t d,
                                          std::int64_t step, OpIndex op) {
  std::optional<TimeNs> latestNs;
  const auto note = [&](OpIndex producer) {
    if (schedule.op(producer).isCopy() || matched.deviceOfOp(producer) == d) return;
    if (const std::optional<Window> extent = matched.extentOf(step, producer)) {
      latestNs = std::max(latestNs.value_or(extent->endNs), extent->endNs);
    }
  };
  for (const OpIndex dep : schedule.op(op).deps) {
    note(dep);
    if (schedule.op(dep).isCopy()) {
      for (const OpIndex producer : schedule.op(dep).deps) note(producer);
    }
  }
  return latestNs;
}

/// Device d's idle time if every op of a kind took d's mean for that kind (kinds d never ran:
/// the mean over the devices that did) and copies were free: the schedule's own bubble.
TimeNs idealIdleNs(const Schedule& schedule, std::int64_t d, const std::vector<DeviceTotals>& totals) {
  const auto meanNs = [&](OpKind kind) -> TimeNs {
    const auto own = totals[static_cast<std::size_t>(d)].byKind.find(kind);
    if (own != totals[static_cast<std::size_t>(d)].byKind.end() && own->second.second > 0) {
      return own->second.first / own->second.second;
    }
    TimeNs sumNs = 0;
    std::int64_t count = 0;
    for (const DeviceTotals& device : totals) {
      const auto found = device.byKind.find(kind);
      if (found == device.byKind.end()) continue;
      sumNs += found->second.first;
      count += found->second.second;
    }
    return count > 0 ? sumNs / count : 0;
  };
  const std::vector<Op>& ops = schedule.ops();
  std::vector<std::optional<TimeNs>> endNs(ops.size());
  // A copy is done when what it carries is: copies are free here.
  const auto readyNs = [&](OpIndex index) -> std::optional<TimeNs> {
    TimeNs latest = 0;
    for (const OpIndex dep : ops[index].deps) {
      if (!endNs[dep]) return std::nullopt;
      latest = std::max(latest, *endNs[dep]);
    }
    return latest;
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(schedule.devices()), 0);
  std::vector<TimeNs> freeNs(next.size(), 0);
  TimeNs makespanNs = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t e = 0; e < next.size(); ++e) {
      const std::vector<OpIndex>& order = schedule.deviceOrder(static_cast<std::int64_t>(e));
      while (next[e] < order.size()) {
        const OpIndex index = order[next[e]];
        // Settle the copies this op waits for (their producers may have just finished).
        for (const OpIndex dep : ops[index].deps) {
          if (ops[dep].isCopy() && !endNs[dep]) endNs[dep] = readyNs(dep);
        }
        const std::optional<TimeNs> ready = readyNs(index);
        if (!ready) break;
        const TimeNs startNs = std::max(freeNs[e], *ready);
        endNs[index] = startNs + meanNs(ops[index].kind);
        freeNs[e] = *endNs[index];
        makespanNs = std::max(makespanNs, freeNs[e]);
        ++next[e];
        progress = true;
      }
    }
  }
  TimeNs busyNs = 0;
  for (const OpIndex index : schedule.deviceOrder(d)) busyNs += meanNs(ops[index].kind);
  return std::max<TimeNs>(0, makespanNs - busyNs);
}

TimeNs meanOf(TimeNs totalNs, std::int64_t windows) {
  return windows > 0 ? std::llround(static_cast<double>(totalNs) / static_cast<double>(windows)) : 0;
}

}  // namespace

const std::array<StepCategory, kStepCategories>& stepCategories() { return kCategories; }

std::string stepCategoryName(StepCategory category) {
  switch (category) {
    case StepCategory::Forward: return "forward";
    case StepCategory::Recompute: return "recompute";
    case StepCategory::Loss: return "loss";
    case StepCategory::Backward: return "backward";
    case StepCategory::BackwardInput: return "backward-input";
    case StepCategory::BackwardWeight: return "backward-weight";
    case StepCategory::Optimizer: return "optimizer";
    case StepCategory::SharedGradients: return "shared-gradients";
    case StepCategory::Bubble: return "bubble";
    case StepCategory::Waiting: return "waiting";
    case StepCategory::Transfer: return "transfer";
    case StepCategory::Overhead: return "overhead";
  }
  return "unknown";
}

bool isComputeCategory(StepCategory category) {
  return static_cast<std::size_t>(category) < static_cast<std::size_t>(StepCategory::Bubble);
}

TimeNs DeviceStepBreakdown::stepNs() const {
  TimeNs sum = 0;
  for (const TimeNs value : ns) sum += value;
  return sum;
}

StepBreakdown breakDownSteps(const Schedule& schedule, const Trace& trace) {
  const MatchedTrace matched(schedule, trace);
  const Walker walker(schedule, matched);
  std::vector<DeviceTotals> totals(static_cast<std::size_t>(schedule.devices()));
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    const std::vector<Window>& windows = matched.windowsOf(matched.traceDevice(d));
    for (std::size_t step = 0; step < windows.size(); ++step) {
      walker.walk(d, static_cast<std::int64_t>(step), windows[step], totals[static_cast<std::size_t>(d)]);
    }
  }
  StepBreakdown breakdown;
  const auto source = trace.metadata.find("source");
  if (source != trace.metadata.end()) breakdown.source = source->second;
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    const DeviceTotals& own = totals[static_cast<std::size_t>(d)];
    breakdown.steps = std::max(breakdown.steps, own.windows);
    DeviceStepBreakdown device;
    device.device = d;
    device.traceDevice = matched.traceDevice(d);
    for (std::size_t c = 0; c < kStepCategories; ++c) device.ns[c] = meanOf(own.ns[c], own.windows);
    // Waiting so far holds every wait for a peer's op; the schedule's share of it is the bubble.
    const TimeNs waitedNs = device.at(StepCategory::Waiting);
    const TimeNs bubbleNs = own.windows > 0 ? std::min(waitedNs, idealIdleNs(schedule, d, totals)) : 0;
    device.at(StepCategory::Bubble) = bubbleNs;
    device.at(StepCategory::Waiting) = waitedNs - bubbleNs;
    breakdown.devices.push_back(std::move(device));
  }
  return breakdown;
}

std::vector<TimeNs> wakeUpsNs(const Schedule& schedule, const Trace& trace) {
  const MatchedTrace matched(schedule, trace);
  std::vector<TimeNs> wakeUps;
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    const std::vector<Window>& windows = matched.windowsOf(matched.traceDevice(d));
    for (std::size_t step = 0; step < windows.size(); ++step) {
      const auto s = static_cast<std::int64_t>(step);
      TimeNs idleSinceNs = windows[step].startNs;  // the end of the device's latest span
      for (const StepItem& item : matched.itemsOf(d, s)) {
        if (item.op) {
          const std::optional<TimeNs> producedNs = producedElsewhereNs(schedule, matched, d, s, *item.op);
          if (producedNs && *producedNs > idleSinceNs && *producedNs <= item.span->startNs) {
            wakeUps.push_back(item.span->startNs - *producedNs);
          }
        }
        idleSinceNs = std::max(idleSinceNs, item.span->endNs());
      }
    }
  }
  return wakeUps;
}

nlohmann::json toJson(const StepBreakdown& breakdown) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceStepBreakdown& device : breakdown.devices) {
    nlohmann::json item = {
        {"device", device.device}, {"trace_device", device.traceDevice}, {"step_ns", device.stepNs()}};
    for (const StepCategory category : kCategories) item[jsonKey(category)] = device.at(category);
    devices.push_back(std::move(item));
  }
  return {{"source", breakdown.source}, {"steps", breakdown.steps}, {"devices", std::move(devices)}};
}

StepBreakdown stepBreakdownFromJson(const JsonCursor& root) {
  StepBreakdown breakdown;
  if (root.has("source")) breakdown.source = root.at("source").asString();
  breakdown.steps = root.at("steps").asNonNegativeInt();
  for (const JsonCursor& item : root.at("devices").items()) {
    DeviceStepBreakdown device;
    device.device = item.at("device").asNonNegativeInt();
    if (item.has("trace_device")) device.traceDevice = item.at("trace_device").asString();
    // Categories a later version adds are absent from older files: they read as 0.
    for (const StepCategory category : kCategories) {
      if (item.has(jsonKey(category))) device.at(category) = item.at(jsonKey(category)).asNonNegativeInt();
    }
    breakdown.devices.push_back(std::move(device));
  }
  return breakdown;
}

}  // namespace pipeprof
