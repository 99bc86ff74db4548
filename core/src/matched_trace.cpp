// The trace matched to a schedule (matched_trace.h): each step's spans and GPU records by op.
#include "matched_trace.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace pipeprof::breakdown {
namespace {

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

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

MatchedTrace::MatchedTrace(const Schedule& schedule, const Trace& trace) : schedule_(schedule) {
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

const std::vector<Window>& MatchedTrace::windowsOf(const std::string& device) const {
  const auto own = windowsByDevice_.find(device);
  if (own != windowsByDevice_.end()) return own->second;
  return sharedWindows_;
}

const std::vector<const TraceEvent*>& MatchedTrace::work(std::int64_t step, OpIndex op) const {
  static const std::vector<const TraceEvent*> kNone;
  const auto found = work_.find(key(step, op));
  return found == work_.end() ? kNone : found->second.records;
}

std::optional<Window> MatchedTrace::extentOf(std::int64_t step, OpIndex op) const {
  const auto found = work_.find(key(step, op));
  if (found != work_.end()) return found->second.extent;
  if (const TraceEvent* own = span(step, op)) return Window{own->startNs, own->endNs()};
  return std::nullopt;
}

std::optional<Message> MatchedTrace::message(std::int64_t step, OpIndex op) const {
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

std::vector<StepItem> MatchedTrace::itemsOf(std::int64_t d, std::int64_t step) const {
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

void MatchedTrace::collectWindows(const Trace& trace) {
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

std::int64_t MatchedTrace::stepOf(const TraceEvent& event) const {
  const std::vector<Window>& windows = windowsOf(event.device);
  const auto after = std::upper_bound(windows.begin(), windows.end(), event.startNs,
                                      [](TimeNs start, const Window& w) { return start < w.startNs; });
  if (after == windows.begin()) return -1;
  const auto window = std::prev(after);
  if (event.startNs > window->endNs) return -1;
  return window - windows.begin();
}

}  // namespace pipeprof::breakdown
