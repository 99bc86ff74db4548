// The device timeline collector: CUPTI activity around runtime ops, merged onto the host clock.
#pragma once

#include <pipeprof/core/trace.h>
#include <pipeprof/profiler/activity_converter.h>
#include <pipeprof/profiler/activity_source.h>
#include <pipeprof/profiler/host_tracer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

/// Collects kernels, copies and memsets while the runtime runs and attributes each to the op
/// (micro-batch, partition, phase) that launched it. Installed as the tracer's OpHooks while
/// started: around every op span it pushes the span's correlation id as CUPTI external
/// correlation id.
///
///   start():  source.start(), clock sample, tracer.setOpHooks(this)
///   ops run:  onOpBegin(id) -> push(id) ... launches ... onOpEnd(id) -> pop()
///   stop():   tracer.setOpHooks(nullptr), device sync + forced flush, clock sample
///   trace(hostTrace): converts every buffer, mapped onto the host clock
///
/// A series of captures (the sweep's traced reference pipelines, one after another) pays
/// CUPTI's enabling once: each capture but the last ends with pause() instead of stop(), which
/// keeps the source recording, and the next start() -- after setTracer() to the next run's
/// tracer -- flushes and throws away what the device did in between rather than enabling it
/// again:
///
///   start() ... pause() | (model built, records thrown away) | start() ... pause() ... stop()
///   source.start()        flush, drop                          flush      flush      source.stop()
///
/// Work run between captures is recorded, so it pays CUPTI's cost: stop() before running what
/// must be timed untraced.
/// It never throws out of start/stop/hooks and never aborts: when the source is unavailable
/// (no driver, no device, no profiling permission, a build without CUPTI) available() is false,
/// unavailableReason() says why in one line, and the host tracer carries on alone.
class CuptiCollector final : public OpHooks {
 public:
  /// A collector on the CUPTI source recording in `mode` (the unavailable twin in a CUDA-less
  /// build).
  static std::unique_ptr<CuptiCollector> create(HostTracer& tracer, CuptiMode mode = CuptiMode::Cheap);
  /// A collector on any source (tests pass a fake).
  CuptiCollector(HostTracer& tracer, std::unique_ptr<ActivitySource> source);
  ~CuptiCollector() override;
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  bool available() const;
  std::string unavailableReason() const;
  /// What the source records.
  CuptiMode mode() const;

  /// Begins a capture; returns false (with a reason) when the source cannot record. After
  /// pause() the source is recording already: what it recorded since is thrown away.
  bool start();
  /// Ends the capture: flushes every record and stops the source recording. Safe to call when
  /// not started, and after pause().
  void stop();
  /// Ends the capture as stop() does, but leaves the source recording for the next start().
  void pause();
  /// The tracer whose op spans the next capture follows (a run's tracer; only between captures).
  /// Throws std::logic_error during a capture.
  void setTracer(HostTracer& tracer);
  bool started() const { return started_; }
  /// Whether the source records: during a capture, and between pause() and start() or stop().
  bool recording() const { return recording_; }

  /// The device events of the capture attributed to the host trace's op spans, on the host
  /// clock; metadata "cupti_mode" and the converter's "cupti_*" counts. Call after stop().
  Trace trace(const Trace& hostTrace);
  /// Records dropped by CUPTI during the last capture (reported, never hidden).
  std::int64_t droppedRecords() const;
  /// Counts of the last trace() call.
  const ConversionStats& stats() const { return stats_; }
  /// A one-line summary of the last trace(), e.g. "cupti (cheap): 812 kernels, 24 copies,
  /// 0 memsets; 790 of 812 kernels attributed (97.3%), 380 by stream; 22 unattributed;
  /// 0 dropped", followed by the kernels nothing dated and the source's mode note when there
  /// are any.
  std::string summary() const;

  void onOpBegin(std::int64_t correlationId) override;
  void onOpEnd(std::int64_t correlationId) override;

 private:
  /// Ends the capture: the hooks off, every record out (the source stopped unless
  /// `keepRecording`), the closing clock sample.
  void endCapture(bool keepRecording);

  HostTracer* tracer_;
  std::unique_ptr<ActivitySource> source_;
  bool started_ = false;
  bool recording_ = false;
  std::int64_t droppedBefore_ = 0;  ///< the source's dropped count when the capture began
  std::int64_t droppedInCapture_ = 0;
  std::vector<ClockSample> clockSamples_;
  std::vector<ActivityBuffer> buffers_;
  ConversionStats stats_;
};

/// Host trace + device trace in one timeline (device events keep their own baseNs-free times;
/// the result's baseNs is the earliest event).
Trace mergeTraces(Trace host, const Trace& device);

}  // namespace pipeprof
