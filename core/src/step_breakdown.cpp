// The step breakdown: a walk over each device's spans, its idle stretches attributed along the
// op dependency graph, and a replay of that graph for the schedule's bubble. Where the trace
// holds the GPU's own records (CUPTI's kernels, memsets and copies, each attributed to its op
// by the "op" arg), an op is the device work attributed to it rather than the host's span of
// it: its kernels are its busy time, its end is its last kernel's, a copy's data moves while
// its copy records run, and a message between ranks moves from when both NCCL kernels for it
// (the receive's and the send's, attributed to "receive <copy>" and "send <copy>") ran.
#include <pipeprof/core/step_breakdown.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

namespace pipeprof {
namespace {

constexpr std::array<StepCategory, kStepCategories> kCategories = {
    StepCategory::Forward,       StepCategory::Recompute,      StepCategory::Loss,      StepCategory::Backward,
    StepCategory::BackwardInput, StepCategory::BackwardWeight, StepCategory::Optimizer, StepCategory::SharedGradients,
    StepCategory::Bubble,        StepCategory::Waiting,        StepCategory::Transfer,  StepCategory::Overhead};

/// The optimizer's span (the training loop's and the simulator's), and the simulator's for the
/// shared parameters' gradient exchange before it.
constexpr const char* kOptimizerSpan = "optimizer";
constexpr const char* kSharedGradientsSpan = "shared gradients";
constexpr const char* kSendPrefix = "send ";
constexpr const char* kReceivePrefix = "receive ";
/// The arg naming the op some device work was attributed to (profiler/activity_converter.h).
constexpr const char* kAttributedOpArg = "op";

/// A record of the GPU's own work: a kernel, a memset or a copy (CUPTI's, on a "cuda:N" device).
bool isDeviceWork(const TraceEvent& event) {
  return event.phase == Phase::Kernel || event.phase == Phase::Memset || event.phase == Phase::Memcpy;
}

StepCategory categoryOf(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return StepCategory::Forward;
    case OpKind::Recompute: return StepCategory::Recompute;
    case OpKind::Loss: return StepCategory::Loss;
    case OpKind::Backward: return StepCategory::Backward;
    case OpKind::BackwardInput: return StepCategory::BackwardInput;
    case OpKind::BackwardWeight: return StepCategory::BackwardWeight;
    case OpKind::Copy:
    case OpKind::SkipCopy: break;
  }
  throw std::logic_error("a copy has no compute category");
}

std::string jsonKey(StepCategory category) {
  std::string key = stepCategoryName(category);
  std::replace(key.begin(), key.end(), '-', '_');
  return key + "_ns";
}

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

struct Window {
  TimeNs startNs = 0;
  TimeNs endNs = 0;
};

/// A span on a device's own time line that is not one of its ops: the optimizer, the shared
/// gradients' exchange, the calibration's step overhead.
struct StepItem {
  const TraceEvent* span = nullptr;
  std::optional<OpIndex> op;  ///< the compute op, or nullopt
  StepCategory category = StepCategory::Overhead;
};

/// A message between ranks: when its receive ran and when its send started.
struct Message {
  Window received;
  std::optional<TimeNs> sentNs;
};

/// The trace's spans keyed by step and op, and each device's windows.
class MatchedTrace {
 public:
  MatchedTrace(const Schedule& schedule, const Trace& trace) : schedule_(schedule) {
    std::unordered_map<std::string, OpIndex> byLabel;
    for (OpIndex index = 0; index < schedule.ops().size(); ++index) byLabel[schedule.label(schedule.op(index))] = index;
    const auto opNamed = [&](const std::string& name) -> std::optional<OpIndex> {
      const auto found = byLabel.find(name);
      return found == byLabel.end() ? std::nullopt : std::optional<OpIndex>(found->second);
    };
    // A rank's "send <copy label>" or "receive <copy label>": the copy op it carries.
    const auto messageNamed = [&](const std::string& name, const std::string& prefix) -> std::optional<OpIndex> {
      return startsWith(name, prefix) ? opNamed(name.substr(prefix.size())) : std::nullopt;
    };
    traceDevices_.resize(static_cast<std::size_t>(schedule.devices()));
    for (const TraceEvent& event : trace.events) {
      if (event.kind != EventKind::Span) continue;
      const std::optional<OpIndex> op = opNamed(event.name);
      if (!op || !schedule.op(*op).isCompute()) continue;
      computeDevices_.insert(event.device);
      std::string& name = traceDevices_.at(static_cast<std::size_t>(deviceOfOp(*op)));
      if (name.empty()) name = event.device;
    }
    collectWindows(trace);
    // A compute op's span or GPU record: the step's compute lasts at least until it ends.
    const auto noteComputeEnd = [&](std::int64_t step, OpIndex op, const TraceEvent& event) {
      if (!schedule.op(op).isCompute()) return;
      TimeNs& last = lastComputeEndNs_[step];
      last = std::max(last, event.endNs());
    };
    for (const TraceEvent& event : trace.events) {
      if (event.kind != EventKind::Span || event.phase == Phase::Step || event.phase == Phase::Warmup) continue;
      const std::int64_t step = stepOf(event);
      if (step < 0) continue;
      if (isDeviceWork(event)) {
        const auto attributed = event.args.find(kAttributedOpArg);
        if (attributed == event.args.end()) continue;  // no op's: the loss's scaling, the optimizer's
        const std::string& owner = attributed->second;
        if (const std::optional<OpIndex> op = opNamed(owner)) {
          work_[key(step, *op)].add(event);
          noteComputeEnd(step, *op, event);
        } else if (const std::optional<OpIndex> sent = messageNamed(owner, kSendPrefix)) {
          sendKernels_[key(step, *sent)].add(event);  // NCCL's, launched by a rank's send
        } else if (const std::optional<OpIndex> received = messageNamed(owner, kReceivePrefix)) {
          receiveKernels_[key(step, *received)].add(event);
        }
        continue;
      }
      if (const std::optional<OpIndex> op = opNamed(event.name)) {
        spans_[key(step, *op)] = &event;
        noteComputeEnd(step, *op, event);
      } else if (const std::optional<OpIndex> sent = messageNamed(event.name, kSendPrefix)) {
        sends_[key(step, *sent)] = &event;
      } else if (const std::optional<OpIndex> received = messageNamed(event.name, kReceivePrefix)) {
        receives_[key(step, *received)] = &event;
      } else if (event.phase == Phase::Optimizer || event.name == kSharedGradientsSpan) {
        StepItem item;
        item.span = &event;
        item.category = event.name == kSharedGradientsSpan ? StepCategory::SharedGradients
                        : event.name == kOptimizerSpan     ? StepCategory::Optimizer
                                                           : StepCategory::Overhead;  // the calibration's step overhead
        others_[step].push_back(item);
      }
    }
  }

  const std::string& traceDevice(std::int64_t d) const { return traceDevices_.at(static_cast<std::size_t>(d)); }
  const std::vector<Window>& windowsOf(const std::string& device) const {
    const auto own = windowsByDevice_.find(device);
    if (own != windowsByDevice_.end()) return own->second;
    return sharedWindows_;
  }
  std::int64_t deviceOfOp(OpIndex op) const { return schedule_.deviceOf(schedule_.op(op).j); }

  const TraceEvent* span(std::int64_t step, OpIndex op) const { return lookUp(spans_, step, op); }
  /// The GPU records attributed to the op in step `step` (empty: none, e.g. on a CPU).
  const std::vector<const TraceEvent*>& work(std::int64_t step, OpIndex op) const {
    static const std::vector<const TraceEvent*> kNone;
    const auto found = work_.find(key(step, op));
    return found == work_.end() ? kNone : found->second.records;
  }
  /// When the op ran, as the device saw it: its GPU records' first start and last end where it
  /// has any, else its span's (nullopt: neither is in the trace).
  std::optional<Window> extentOf(std::int64_t step, OpIndex op) const {
    const auto found = work_.find(key(step, op));
    if (found != work_.end()) return found->second.extent;
    if (const TraceEvent* own = span(step, op)) return Window{own->startNs, own->endNs()};
    return std::nullopt;
  }
  /// A copy op between ranks, as the receiver saw it: from its receive's start (the receive
  /// posted) to its end (the data in), and when the sender's send started (nullopt: the sender's
  /// side is not in the trace). On a GPU these are NCCL's kernels, which run on the devices well
  /// after the host's spans of them; elsewhere the spans. Nullopt: no receive of it in the trace.
  std::optional<Message> message(std::int64_t step, OpIndex op) const {
    const auto kernels = receiveKernels_.find(key(step, op));
    if (kernels != receiveKernels_.end()) {
      const auto sent = sendKernels_.find(key(step, op));
      return Message{kernels->second.extent,
                     sent == sendKernels_.end() ? std::nullopt : std::optional<TimeNs>(sent->second.extent.startNs)};
    }
    const TraceEvent* received = lookUp(receives_, step, op);
    if (received == nullptr) return std::nullopt;
    const TraceEvent* sent = lookUp(sends_, step, op);
    return Message{Window{received->startNs, received->endNs()},
                   sent == nullptr ? std::nullopt : std::optional<TimeNs>(sent->startNs)};
  }
  /// When the last compute op of any device ended in step `step` (nullopt: none traced).
  std::optional<TimeNs> lastComputeEndNs(std::int64_t step) const {
    const auto found = lastComputeEndNs_.find(step);
    return found == lastComputeEndNs_.end() ? std::nullopt : std::optional<TimeNs>(found->second);
  }

  /// Device d's spans of step `step`, by start: its ops, then what else runs on its trace
  /// device or on a device that runs no stage (the optimizer of threads on the host).
  std::vector<StepItem> itemsOf(std::int64_t d, std::int64_t step) const {
    std::vector<StepItem> items;
    for (const OpIndex op : schedule_.deviceOrder(d)) {
      const StepCategory category = categoryOf(schedule_.op(op).kind);
      const std::vector<const TraceEvent*>& records = work(step, op);
      if (!records.empty()) {
        for (const TraceEvent* record : records) items.push_back({record, op, category});
      } else if (const TraceEvent* found = span(step, op)) {
        items.push_back({found, op, category});
      }
    }
    if (items.empty()) return items;
    const auto others = others_.find(step);
    if (others != others_.end()) {
      for (const StepItem& item : others->second) {
        if (item.span->device == traceDevice(d) || computeDevices_.count(item.span->device) == 0) items.push_back(item);
      }
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const StepItem& a, const StepItem& b) { return a.span->startNs < b.span->startNs; });
    return items;
  }

 private:
  using SpanMap = std::unordered_map<std::uint64_t, const TraceEvent*>;

  /// An op's GPU records and the time from the first's start to the last's end.
  struct DeviceWork {
    std::vector<const TraceEvent*> records;
    Window extent;

    void add(const TraceEvent& record) {
      extent = records.empty()
                   ? Window{record.startNs, record.endNs()}
                   : Window{std::min(extent.startNs, record.startNs), std::max(extent.endNs, record.endNs())};
      records.push_back(&record);
    }
  };

  std::uint64_t key(std::int64_t step, OpIndex op) const {
    return static_cast<std::uint64_t>(step) * schedule_.ops().size() + op;
  }
  const TraceEvent* lookUp(const SpanMap& map, std::int64_t step, OpIndex op) const {
    const auto found = map.find(key(step, op));
    return found == map.end() ? nullptr : found->second;
  }

  /// Step spans by device; those on a device that runs no stage are every device's. Without
  /// any, one window over every span.
  void collectWindows(const Trace& trace) {
    TimeNs firstNs = 0;
    TimeNs lastNs = 0;
    bool any = false;
    for (const TraceEvent& event : trace.events) {
      if (event.kind != EventKind::Span) continue;
      if (event.phase == Phase::Step) {
        const Window window{event.startNs, event.endNs()};
        if (computeDevices_.count(event.device) > 0) {
          windowsByDevice_[event.device].push_back(window);
        } else {
          sharedWindows_.push_back(window);
        }
      } else if (event.phase != Phase::Warmup) {
        firstNs = any ? std::min(firstNs, event.startNs) : event.startNs;
        lastNs = any ? std::max(lastNs, event.endNs()) : event.endNs();
        any = true;
      }
    }
    const auto byStart = [](const Window& a, const Window& b) { return a.startNs < b.startNs; };
    for (auto& [device, windows] : windowsByDevice_) std::sort(windows.begin(), windows.end(), byStart);
    std::sort(sharedWindows_.begin(), sharedWindows_.end(), byStart);
    if (windowsByDevice_.empty() && sharedWindows_.empty() && any) sharedWindows_.push_back({firstNs, lastNs});
  }

  /// The index of the window of the event's device that holds its start, or -1.
  std::int64_t stepOf(const TraceEvent& event) const {
    const std::vector<Window>& windows = windowsOf(event.device);
    const auto after = std::upper_bound(windows.begin(), windows.end(), event.startNs,
                                        [](TimeNs start, const Window& w) { return start < w.startNs; });
    if (after == windows.begin()) return -1;
    const auto window = std::prev(after);
    if (event.startNs > window->endNs) return -1;
    return window - windows.begin();
  }

  const Schedule& schedule_;
  std::vector<std::string> traceDevices_;
  std::set<std::string> computeDevices_;
  std::map<std::string, std::vector<Window>> windowsByDevice_;
  std::vector<Window> sharedWindows_;
  SpanMap spans_;
  std::unordered_map<std::uint64_t, DeviceWork> work_;
  SpanMap sends_;
  SpanMap receives_;
  std::unordered_map<std::uint64_t, DeviceWork> sendKernels_;
  std::unordered_map<std::uint64_t, DeviceWork> receiveKernels_;
  std::map<std::int64_t, TimeNs> lastComputeEndNs_;
  std::map<std::int64_t, std::vector<StepItem>> others_;
};

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
