// The step breakdown: where each pipeline device's training step went, in categories that sum
// to the step exactly. One code path for measured traces (threads or ranks) and predicted ones.
//
// A device's step is its window (its "step" span; one span for every device when the trace's
// steps are on a device that runs no stage; without step spans, one window from the trace's
// first span to its last). Walking the device's spans in time order, a busy stretch counts as
// its op's kind (forward, recompute, loss, backward, backward-input, backward-weight), the
// optimizer, or the shared-gradient exchange; every idle stretch before an op X is attributed
// by the op dependency graph to the dependency of X that was ready last (the critical path):
//
//   - while that dependency's producing op on another device was still running:  waiting
//   - from then until its data started moving (a send's or copy's dispatch):     overhead
//   - while the data was in flight (a copy's span; from the later of a receive's   transfer
//     post and its send's start to the receive's end):
//   - after the data arrived, or with nothing to wait for, until X started:      overhead
//
// The tail after a device's last op waits for the last op of any device, then is overhead.
// On a GPU (CUPTI's records in the trace, each attributed to its op by the "op" arg) an op is
// the device's work for it: its kernels and memsets are its busy time and its end, a copy's
// data is in flight while its copy records run, and a message between ranks is NCCL's kernels
// for it: the receive's kernel waits from its start until the send's kernel starts, then
// transfers until it ends.
// Waiting then splits into the schedule's bubble and waiting for a peer: the bubble is the idle
// time the device would have if every stage took its own ops' times (a replay of the schedule's
// dependency graph with each op kind costing the device's mean, copies free), at most its
// waiting; the rest is waiting for a peer (imbalance). With equal stages and free links the
// whole idle is bubble: (p - 1) / (m + p - 1) of a GPipe or 1F1B step. docs/runtime.md draws it.
#pragma once

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

enum class StepCategory {
  Forward,
  Recompute,
  Loss,
  Backward,
  BackwardInput,
  BackwardWeight,
  Optimizer,
  SharedGradients,
  Bubble,
  Waiting,
  Transfer,
  Overhead
};
inline constexpr std::size_t kStepCategories = 12;

/// Every category, in the order above (compute first, then the idle ones).
const std::array<StepCategory, kStepCategories>& stepCategories();
/// "forward", "recompute", "loss", "backward", "backward-input", "backward-weight",
/// "optimizer", "shared-gradients", "bubble", "waiting", "transfer", "overhead".
std::string stepCategoryName(StepCategory category);
/// Whether the device was computing (the first eight) rather than idle.
bool isComputeCategory(StepCategory category);

/// One pipeline device's mean step, by category.
struct DeviceStepBreakdown {
  std::int64_t device = 0;                   ///< pipeline device d
  std::string traceDevice;                   ///< the trace's name for it, e.g. "cpu:0", "device:1"
  std::array<TimeNs, kStepCategories> ns{};  ///< mean per step, rounded to whole ns

  TimeNs at(StepCategory category) const { return ns[static_cast<std::size_t>(category)]; }
  TimeNs& at(StepCategory category) { return ns[static_cast<std::size_t>(category)]; }
  /// The device's step: the sum of its categories.
  TimeNs stepNs() const;
};

struct StepBreakdown {
  std::string source;                        ///< the trace's "source" metadata ("measured", "predicted")
  std::int64_t steps = 0;                    ///< windows averaged
  std::vector<DeviceStepBreakdown> devices;  ///< one per pipeline device, by d
};

/// Breaks down every step of `trace`, whose spans are named by `schedule`'s op labels (a
/// measured run's or the simulator's trace of that candidate). Spans the schedule does not
/// know are ignored; a device with no span of its ops gets an empty breakdown. Never throws on
/// an empty trace (steps 0).
StepBreakdown breakDownSteps(const Schedule& schedule, const Trace& trace);

/// The wake-ups of `trace` (spans named as for breakDownSteps): for every op of every step
/// whose device sat idle from before another device's op it waited for (the op whose output or
/// gradient it takes, through a copy or directly) ended until after it, the time from that op's
/// end to its own start. On threads of one process that is a sleeping worker's wake-up (the
/// calibration's wake latency, simulator/calibration_fit.h); between ranks the message's
/// latency as well. In step order, device by device; empty for a trace without steps.
std::vector<TimeNs> wakeUpsNs(const Schedule& schedule, const Trace& trace);

/// {"source", "steps", "devices": [{"device", "trace_device", "step_ns", "<category>_ns"...}]}
/// with categories named as stepCategoryName with '-' as '_' ("backward_input_ns").
nlohmann::json toJson(const StepBreakdown& breakdown);
/// The inverse of toJson; throws FormatError naming the file and the JSON path.
StepBreakdown stepBreakdownFromJson(const JsonCursor& json);

}  // namespace pipeprof
