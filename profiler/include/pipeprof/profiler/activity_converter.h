// Turns activity records into trace events: clock mapping, attribution to ops, launch->kernel flows.
#pragma once

#include <pipeprof/core/trace.h>
#include <pipeprof/profiler/activity_records.h>
#include <pipeprof/profiler/stream_attribution.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// A linear map from the device (CUPTI) clock to the host tracer's clock:
/// hostNs = hostRefNs + slope * (deviceNs - deviceRefNs), rounded to the nearest ns.
struct ClockMap {
  std::int64_t deviceRefNs = 0;
  std::int64_t hostRefNs = 0;
  double slope = 1.0;

  std::int64_t toHostNs(std::uint64_t deviceNs) const;

  /// Least-squares line through paired samples. With one sample (or samples at a single
  /// device time) only the offset is fitted (slope 1); with none the map is the identity.
  static ClockMap fit(const std::vector<ClockSample>& samples);
};

/// What a conversion did, for the one-line summary and the trace metadata.
struct ConversionStats {
  std::int64_t kernels = 0;
  std::int64_t memcpys = 0;
  std::int64_t memsets = 0;
  std::int64_t launches = 0;           ///< runtime/driver API calls that launched attributed work
  std::int64_t attributed = 0;         ///< kernels, copies and memsets linked to a host op span
  std::int64_t attributedKernels = 0;  ///< of those, kernels
  /// Of the attributed, linked by stream: by the launch time of their API record, by their
  /// queue time (a kernel without one) or by the kernels around them on their stream.
  std::int64_t attributedByStream = 0;
  std::int64_t attributedByQueueTime = 0;    ///< of attributedByStream, by queue time
  std::int64_t attributedByStreamOrder = 0;  ///< of attributedByStream, by the kernels around them
  std::int64_t unattributed = 0;             ///< kernels, copies and memsets with no op (e.g. outside any op)
  /// Kernels with no external id, no API record and no queued timestamp: nothing says when
  /// they were launched (in cheap mode: CUPTI did not collect queue times).
  std::int64_t kernelsWithoutLaunchTime = 0;
  std::int64_t flows = 0;  ///< launch -> kernel flow pairs
  std::int64_t droppedRecords = 0;

  /// attributedKernels / kernels (0 without kernels).
  double attributedKernelShare() const {
    return kernels > 0 ? static_cast<double>(attributedKernels) / static_cast<double>(kernels) : 0.0;
  }
};

/// Accumulates activity buffers (in any order) and the host spans of the same capture, then
/// converts everything at once, so a record may arrive before or after the records it refers
/// to.
///
/// Device work lands on device "cuda:<deviceId>", lane "stream <streamId>"; API calls that
/// launched work land on the attributed op's device (or "host"), lane "cuda api <threadId>".
/// Attribution: CUPTI correlationId -> external id (pushed around each op) -> the host span
/// with that correlationId; the event then carries the op's i and j, args "op" (its name) and
/// "op_phase", and correlationId = the op's id. Work without an external id (what autograd
/// launches from its own device thread, and everything in cheap mode) is attributed by its
/// stream and launch time instead (stream_attribution.h): the start of its API record (args
/// "attributed_by" = "stream"), else a kernel's queued timestamp ("queue time"); a copy or
/// memset with neither takes the op of the kernels just before and after it on its stream
/// when both have the same one ("stream order"). NCCL's kernels (a name with "nccl") are
/// attributed by their external id alone: a rank's send or posted receive pushed its message
/// span's id around the call that launched them, which exact mode records; in cheap mode they
/// stay unattributed rather than joining a compute op. Flows (FlowStart at the launch, FlowEnd
/// at the kernel) use the CUPTI correlation id as flow id.
class ActivityConverter {
 public:
  explicit ActivityConverter(ClockMap clock = {});

  /// Indexes the spans of a host trace that carry a correlation id (runtime op spans).
  void addHostSpans(const Trace& hostTrace);
  void addBuffer(const ActivityBuffer& buffer);
  void setDroppedRecords(std::int64_t dropped) { stats_.droppedRecords = dropped; }

  /// The device events (host clock), sorted; metadata "cupti_*" counts. Fills stats().
  Trace convert();
  const ConversionStats& stats() const { return stats_; }

 private:
  struct OpRef {
    std::string name;
    std::string device;
    std::int64_t correlationId = -1;
    std::int64_t i = -1;
    std::int64_t j = -1;
    Phase phase = Phase::Other;
    std::int64_t startNs = 0;  ///< host clock
    std::int64_t endNs = 0;
    std::int64_t deviceIndex = -1;  ///< N of a "cuda:N" device, else -1
  };
  /// How some device work was linked to its op.
  enum class Link { None, ById, ByLaunchTime, ByQueueTime, ByStreamOrder };
  /// The op of some device work (null: none) and how it was found. `timed`: an external id, an
  /// API record or a queue time said when the work was launched (work without one may still
  /// be placed by stream order).
  struct Resolved {
    const OpRef* op = nullptr;
    Link link = Link::None;
    bool timed = false;
  };
  const OpRef* opOf(std::uint32_t cuptiCorrelationId) const;
  /// Teaches the stream attribution the ops' compute spans and the streams of work attributed
  /// by id (else by votes of the launch and queue times), and notes when each correlation id
  /// was launched.
  void prepareStreamAttribution();
  /// The launch time of a correlation id's API record, else the queue time (host clock) given.
  std::optional<std::int64_t> launchTimeOf(std::uint32_t cuptiCorrelationId,
                                           std::optional<std::int64_t> queuedNs) const;
  Resolved resolve(std::uint32_t cuptiCorrelationId, std::uint32_t deviceId, std::uint32_t streamId,
                   std::optional<std::int64_t> queuedNs) const;
  /// A kernel's queued timestamp on the host clock, when CUPTI collected one.
  std::optional<std::int64_t> queuedHostNs(const KernelRecord& kernel) const;
  void attribute(TraceEvent& event, std::uint32_t cuptiCorrelationId, const Resolved& resolved);

  /// convert()'s working state: each kernel's op, the dated kernels per stream, and the
  /// correlation ids that launched device work (activity_converter.cpp).
  struct Conversion;
  /// Resolves each kernel's op, and lists the dated kernels per stream in start order.
  void resolveKernels(Conversion& conversion) const;
  /// Undated work (`resolved` not timed) takes the op of the dated kernels just before and after
  /// it on its stream when both have the same one; else `resolved` stays.
  Resolved byStreamOrder(const Conversion& conversion, Resolved resolved, std::uint32_t deviceId,
                         std::uint32_t streamId, std::uint64_t startNs) const;
  /// The kernels, with a flow end at each one's start; then the memcpys and the memsets.
  void addKernels(Conversion& conversion, Trace& trace);
  void addCopiesAndMemsets(Conversion& conversion, Trace& trace);
  /// The API calls that launched device work, with a flow start at each kernel launch.
  void addLaunches(const Conversion& conversion, Trace& trace);

  ClockMap clock_;
  std::map<std::int64_t, OpRef> ops_;                ///< host span correlationId -> op
  std::map<std::uint32_t, std::uint64_t> external_;  ///< CUPTI correlationId -> external id
  std::map<std::uint32_t, std::int64_t> launchNs_;   ///< CUPTI correlationId -> API call start (host)
  StreamAttribution streams_;
  ActivityBuffer records_;
  ConversionStats stats_;
};

/// The demangled form of a C++ symbol, or the text unchanged.
std::string demangle(const std::string& symbol);

}  // namespace pipeprof
