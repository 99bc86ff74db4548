// Host tracer: spans and memory counters from any thread into per-thread buffers, drained on demand.
#pragma once

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// A nanosecond clock; tests pass a fake.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeNs nowNs() const = 0;
};

/// std::chrono::steady_clock in nanoseconds: the one clock every measured time of pipeprof reads.
TimeNs steadyNowNs();

/// steadyNowNs() as a Clock.
class SteadyClock final : public Clock {
 public:
  TimeNs nowNs() const override;
};

/// Told when a runtime op begins and ends on the calling thread, with the op's correlation id;
/// the CUPTI collector pushes and pops an external correlation id here.
class OpHooks {
 public:
  virtual ~OpHooks() = default;
  virtual void onOpBegin(std::int64_t correlationId) = 0;
  virtual void onOpEnd(std::int64_t correlationId) = 0;
};

/// Collects events. record*() take no lock on the hot path: each thread appends to its own
/// buffer, registered once under a mutex. Disabled by default; with tracing off a caller
/// pays one relaxed atomic load per op (see enabled()).
class HostTracer {
 public:
  explicit HostTracer(std::shared_ptr<const Clock> clock = std::make_shared<SteadyClock>());
  ~HostTracer();
  HostTracer(const HostTracer&) = delete;
  HostTracer& operator=(const HostTracer&) = delete;

  void enable();
  void disable();
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }

  TimeNs nowNs() const { return clock_->nowNs(); }
  const Clock& clock() const { return *clock_; }

  /// A fresh correlation id (unique within this tracer).
  std::int64_t nextCorrelationId() noexcept { return nextCorrelation_.fetch_add(1, std::memory_order_relaxed); }

  /// Appends an event to the calling thread's buffer (ignored when disabled).
  void record(TraceEvent event);
  /// A memory counter sample: name "memory", value = bytes in use on device.
  void recordCounter(const std::string& device, const std::string& name, TimeNs atNs, double value);

  void setOpHooks(OpHooks* hooks) { hooks_.store(hooks, std::memory_order_release); }
  OpHooks* opHooks() const noexcept { return hooks_.load(std::memory_order_acquire); }

  /// Moves every thread's events out (sorted by time) into one trace; buffers are emptied.
  /// Call when no thread is recording.
  Trace drain();

 private:
  struct Buffer;
  Buffer& localBuffer();

  std::shared_ptr<const Clock> clock_;
  std::atomic<bool> enabled_{false};
  std::atomic<std::int64_t> nextCorrelation_{1};
  std::atomic<OpHooks*> hooks_{nullptr};
  std::uint64_t id_;  ///< distinguishes tracers in the thread-local buffer cache
  std::mutex buffersMutex_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
};

/// RAII: the device work this thread launches while it lives belongs to the span of
/// `correlationId`, which is recorded apart from it (a rank's message: NCCL launches a receive's
/// kernel when the receive is posted, long before the receive's span). Calls the op hooks; with
/// a null or disabled tracer, or no hooks, it does nothing.
class OpHookScope {
 public:
  OpHookScope(HostTracer* tracer, std::int64_t correlationId);
  ~OpHookScope();
  OpHookScope(const OpHookScope&) = delete;
  OpHookScope& operator=(const OpHookScope&) = delete;

 private:
  OpHooks* hooks_ = nullptr;
  std::int64_t correlationId_ = -1;
};

/// RAII span around one runtime op: records "forward(2,1)" etc. on the partition's lane and
/// calls the op hooks. With a null or disabled tracer it does nothing beyond one branch.
class OpSpan {
 public:
  OpSpan(HostTracer* tracer, OpKind kind, std::int64_t i, std::int64_t j, std::int64_t toJ, const std::string& device,
         const std::string& lane, const std::string& name);
  ~OpSpan();
  OpSpan(const OpSpan&) = delete;
  OpSpan& operator=(const OpSpan&) = delete;
  /// Bytes moved (copies).
  void setBytes(Bytes bytes) { bytes_ = bytes; }

 private:
  HostTracer* tracer_;               ///< null when tracing is off
  std::optional<TraceEvent> event_;  ///< engaged only when recording, so the off path builds nothing
  Bytes bytes_ = 0;
};

}  // namespace pipeprof
