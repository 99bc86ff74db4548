// Where device activity records come from: the CUPTI Activity API, or a fake in tests.
#pragma once

#include <pipeprof/profiler/activity_records.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

/// What the CUPTI source records (docs/profiler.md, "CUPTI collector").
enum class CuptiMode {
  /// Kernels (with CUPTI's queued and submitted timestamps), copies and memsets; no API records.
  /// Work is attributed by stream and queue time. The default: it adds no record per API call.
  Cheap,
  /// Cheap's kinds without queue times, plus one API record for each launch, copy and memset
  /// call (only those calls) and the external correlation records that tie them to ops.
  Exact,
};

/// "cheap" or "exact".
std::string cuptiModeName(CuptiMode mode);
/// The mode named `name` ("cheap" or "exact"). Throws std::invalid_argument naming the value and
/// the choices.
CuptiMode parseCuptiMode(const std::string& name);

/// A producer of activity buffers. The CUPTI implementation is the only code that includes
/// CUPTI headers (profiler/src/cupti_activity_source.cpp, chosen by CMake); the CUDA-less build
/// links a twin whose source is never available. Implementations never throw and never abort:
/// a failure makes the source unavailable with a one-line reason.
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;

  /// Whether records can be collected (driver, device and profiling permission present).
  virtual bool available() const = 0;
  /// One line saying why not (empty when available).
  virtual std::string unavailableReason() const = 0;

  /// Starts recording. Returns false (and becomes unavailable with a reason) on failure.
  virtual bool start() = 0;
  /// Synchronises the device, forces out every pending record and stops recording.
  virtual void stop() = 0;
  /// Synchronises the device and forces out every pending record; recording goes on. Nothing
  /// when not recording.
  virtual void flush() = 0;
  /// Moves out the buffers completed so far, in completion order (records inside may be out
  /// of order).
  virtual std::vector<ActivityBuffer> takeBuffers() = 0;
  /// Records CUPTI dropped since start (buffers full or not handed out in time).
  virtual std::int64_t droppedRecords() const = 0;

  /// Pushes / pops the external correlation id attributed to device work launched by the
  /// calling thread until the matching pop.
  virtual void pushExternalCorrelation(std::uint64_t externalId) = 0;
  virtual void popExternalCorrelation() = 0;

  /// Reads the device clock and the given host clock back to back.
  virtual ClockSample clockSample(const std::function<std::int64_t()>& hostNowNs) = 0;

  /// What this source records.
  virtual CuptiMode mode() const = 0;
  /// One line when the last start() set the mode up other than planned (exact mode fell back
  /// to whole API kinds, queue timestamps could not be turned on), else empty.
  virtual std::string modeNote() const = 0;
};

/// The CUPTI-backed source recording in `mode` (or, in a build without CUPTI, one that reports
/// why it is unavailable). Never throws.
std::unique_ptr<ActivitySource> makeCuptiActivitySource(CuptiMode mode = CuptiMode::Cheap);

}  // namespace pipeprof
