// Where device activity records come from: the CUPTI Activity API, or a fake in tests.
#pragma once

#include <pipeprof/profiler/activity_records.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

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
};

/// The CUPTI-backed source (or, in a build without CUPTI, one that reports why it is
/// unavailable). Never throws.
std::unique_ptr<ActivitySource> makeCuptiActivitySource();

}  // namespace pipeprof
