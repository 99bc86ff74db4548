// The trace matched to a schedule, for the step breakdown (step_breakdown.cpp): each step's
// spans, GPU records and messages keyed by op, and each device's step windows.
#pragma once

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/step_breakdown.h>
#include <pipeprof/core/trace.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace pipeprof::breakdown {

/// A stretch of time: a step's window, or the extent of an op's GPU records.
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
  /// Matches `trace`'s spans to `schedule`'s ops, step by step.
  MatchedTrace(const Schedule& schedule, const Trace& trace);

  const std::string& traceDevice(std::int64_t d) const { return traceDevices_.at(static_cast<std::size_t>(d)); }
  /// Device `device`'s step windows (those of a device that runs no stage where it has none).
  const std::vector<Window>& windowsOf(const std::string& device) const;
  std::int64_t deviceOfOp(OpIndex op) const { return schedule_.deviceOf(schedule_.op(op).j); }

  const TraceEvent* span(std::int64_t step, OpIndex op) const { return lookUp(spans_, step, op); }
  /// The GPU records attributed to the op in step `step` (empty: none, e.g. on a CPU).
  const std::vector<const TraceEvent*>& work(std::int64_t step, OpIndex op) const;
  /// When the op ran, as the device saw it: its GPU records' first start and last end where it
  /// has any, else its span's (nullopt: neither is in the trace).
  std::optional<Window> extentOf(std::int64_t step, OpIndex op) const;
  /// A copy op between ranks, as the receiver saw it: from its receive's start (the receive
  /// posted) to its end (the data in), and when the sender's send started (nullopt: the sender's
  /// side is not in the trace). On a GPU these are NCCL's kernels, which run on the devices well
  /// after the host's spans of them; elsewhere the spans. Nullopt: no receive of it in the trace.
  std::optional<Message> message(std::int64_t step, OpIndex op) const;
  /// When the last compute op of any device ended in step `step` (nullopt: none traced).
  std::optional<TimeNs> lastComputeEndNs(std::int64_t step) const {
    const auto found = lastComputeEndNs_.find(step);
    return found == lastComputeEndNs_.end() ? std::nullopt : std::optional<TimeNs>(found->second);
  }

  /// Device d's spans of step `step`, by start: its ops, then what else runs on its trace
  /// device or on a device that runs no stage (the optimizer of threads on the host).
  std::vector<StepItem> itemsOf(std::int64_t d, std::int64_t step) const;

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
  void collectWindows(const Trace& trace);

  /// The index of the window of the event's device that holds its start, or -1.
  std::int64_t stepOf(const TraceEvent& event) const;

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

}  // namespace pipeprof::breakdown
