// Timeline analysis: busy/idle, bubbles, op kinds, copy bandwidth, idle gaps and top kernels of a trace.
//
// One code path for measured (host tracer, CUPTI) and predicted (simulator) traces:
// - Stages: compute spans (forward, recompute, backward, loss) grouped by partition j (by
//   device when a span has no partition). busyNs is the union of a stage's compute spans;
//   idleNs = windowNs - busyNs; bubbleFraction = idleNs / windowNs.
// - Devices: the same over every stage on one trace device (an interleaved schedule's virtual
//   stages share their device's worker, so a stage waiting while its device runs another stage
//   is not idle). The trace's bubbleFraction is the mean over devices; with one stage per
//   device it is the mean over stages.
// - Window: with "step" spans (a measured run), only events inside a step count and windowNs is
//   the sum of the step durations; iterationNs is their mean. Without step spans (one
//   simulated step) the window runs from the first to the last compute or copy span.
// - Idle gaps: per device, the gaps between its busy intervals inside each window (including
//   the lead-in and the tail); each names the stage and op that end the gap and the op on
//   another device that ended last before the gap ended (what the device was waiting for).
#pragma once

#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

struct StageSummary {
  std::int64_t partition = -1;  ///< j, or -1 when grouped by device
  std::string device;
  std::int64_t ops = 0;  ///< compute spans
  TimeNs busyNs = 0;
  TimeNs idleNs = 0;
  double bubbleFraction = 0.0;
};

/// A trace device: every stage whose compute spans run on it.
struct DeviceSummary {
  std::string device;
  std::vector<std::int64_t> partitions;  ///< its stages, increasing (empty: spans without one)
  std::int64_t ops = 0;  ///< compute spans
  TimeNs busyNs = 0;     ///< union of its stages' compute spans
  TimeNs idleNs = 0;
  double bubbleFraction = 0.0;
};

struct OpKindSummary {
  std::string kind;  ///< phase name, e.g. "forward", "kernel"
  std::int64_t count = 0;
  TimeNs totalNs = 0;
  TimeNs meanNs = 0;  ///< total / count, rounded down
};

struct CopySummary {
  std::string direction;  ///< "0->1" (partitions) or a CUPTI copy kind such as "HtoD"
  std::int64_t count = 0;
  Bytes bytes = 0;
  TimeNs totalNs = 0;
  double bandwidthBytesPerS = 0.0;  ///< bytes / total time; 0 when the time is 0
};

struct IdleGap {
  std::int64_t partition = -1;  ///< the stage of nextOp (-1 for a tail gap of a device with several)
  std::string device;
  TimeNs startNs = 0;  ///< relative to the trace's first window start
  TimeNs durationNs = 0;
  std::string nextOp;     ///< the device's op that ends the gap ("" for a tail gap)
  std::string waitedFor;  ///< op on another device that ended last before the gap ended ("" if none)
};

struct KernelSummary {
  std::string name;
  std::int64_t count = 0;
  TimeNs totalNs = 0;
  TimeNs meanNs = 0;
};

struct TimelineAnalysis {
  std::string source;       ///< the trace's "source" metadata ("measured", "predicted", ...)
  std::int64_t steps = 0;   ///< windows analysed (step spans, or 1)
  TimeNs windowNs = 0;      ///< total analysed time
  TimeNs iterationNs = 0;   ///< mean step (window) duration
  double bubbleFraction = 0.0;  ///< mean over devices
  std::vector<StageSummary> stages;     ///< by partition, then device
  std::vector<DeviceSummary> devices;   ///< by device name
  std::vector<OpKindSummary> opKinds;   ///< by kind name
  std::vector<CopySummary> copies;      ///< by direction
  std::vector<IdleGap> largestGaps;     ///< longest first (ties: earlier first), at most maxGaps
  std::vector<KernelSummary> topKernels;  ///< by total time, at most maxKernels
  std::int64_t counters = 0;  ///< counter samples present
};

struct AnalysisOptions {
  std::size_t maxGaps = 5;
  std::size_t maxKernels = 10;
};

/// Analyses a trace (see the file comment for the definitions). Never throws on an empty trace.
TimelineAnalysis analyzeTimeline(const Trace& trace, const AnalysisOptions& options = {});

/// The JSON form embedded in reports (snake_case keys, ns and bytes).
nlohmann::json toJson(const TimelineAnalysis& analysis);
/// A human-readable summary for `pipeprof trace summarize`.
std::string formatAnalysis(const TimelineAnalysis& analysis);

}  // namespace pipeprof
