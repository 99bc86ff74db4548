// The one trace model: host spans, GPU kernels and copies, simulated ops, memory counters, flows.
#pragma once

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeprof {

/// What kind of record an event is; maps onto Chrome trace phases X, C, s and f.
enum class EventKind { Span, Counter, FlowStart, FlowEnd };

/// What the event's work was. Runtime ops use the first five; CUPTI records the next four;
/// the CLI's host spans the last ones.
// clang-format off
enum class Phase {
  Forward, Recompute, Backward, Copy, SkipCopy, Loss,
  Kernel, Memcpy, Memset, Launch,
  Warmup, Step, Optimizer, Other
};
// clang-format on

/// "forward", "recompute", "backward", "copy", "skip-copy", "loss", "kernel", "memcpy", "memset",
/// "launch", "warmup", "step", "optimizer", "other"; parsePhase throws on unknown text.
std::string phaseName(Phase phase);
Phase parsePhase(const std::string& text);

/// The trace phase of a scheduled op kind (measured and predicted traces use the same one).
Phase phaseOf(OpKind kind);

/// One event. Times are absolute on the producing clock (host monotonic ns for measured
/// traces, simulated ns from 0 for predictions); Trace::baseNs is subtracted when written.
struct TraceEvent {
  EventKind kind = EventKind::Span;
  std::string name;    ///< span/counter name, e.g. "forward(2,1)" or a kernel name
  std::string device;  ///< process in the Chrome trace, e.g. "cpu:0", "cuda:1"
  std::string lane;    ///< thread in the Chrome trace, e.g. "partition 0", "stream 7", "copy 0->1"
  TimeNs startNs = 0;
  TimeNs durationNs = 0;         ///< spans only
  std::int64_t microBatch = -1;  ///< i, or -1
  std::int64_t partition = -1;   ///< j, or -1
  Phase phase = Phase::Other;
  std::int64_t correlationId = -1;          ///< links kernels to launches and ops; flow id for flows
  Bytes bytes = 0;                          ///< bytes moved (copies)
  double value = 0.0;                       ///< counter value (bytes in use for memory counters)
  std::map<std::string, std::string> args;  ///< extra details shown in viewers

  TimeNs endNs() const { return startNs + durationNs; }
};

/// A whole timeline.
struct Trace {
  TimeNs baseNs = 0;  ///< subtracted from every timestamp when written
  std::vector<TraceEvent> events;
  std::map<std::string, std::string> metadata;  ///< e.g. "source": "measured" | "predicted"
};

/// Sorts events by (start, device, lane, name) so output is deterministic.
void sortEvents(Trace& trace);

/// The trace's steps: its step spans (Phase::Step) in the order the trace holds them. In a
/// multi-process run's merged trace, where every rank has a span per step (from the barrier
/// that opens it to the rank's last op), step k is the longest of the ranks' k-th spans: the
/// pipeline's step, as a multi-process run measures it (the largest of the ranks' per step).
std::vector<const TraceEvent*> stepSpans(const Trace& trace);

/// Multiplies every event's start and duration in `trace` by `factor`, rounded so that adjacent
/// spans stay adjacent (a predicted twin under drift).
void scaleTraceTimes(Trace& trace, double factor);

/// One timeline from traces that share a time base (the rank files of one multi-process run,
/// each counting from the same instant): every event, sorted; the first trace's metadata.
Trace concatenateTraces(const std::vector<Trace>& traces);

}  // namespace pipeprof
