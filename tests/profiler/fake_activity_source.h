// A fake ActivitySource: hands synthetic CUPTI-shaped buffers to the collector, no GPU needed.
#pragma once

#include <pipeprof/profiler/activity_source.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof::test {

/// Buffers are queued by the test and delivered at takeBuffers() in the order given (so a test can
/// deliver them out of order); pushes/pops of external ids are logged; the device clock is
/// hostNs * slope + offset of the host clock reading it is handed.
class FakeActivitySource final : public ActivitySource {
 public:
  bool isAvailable = true;
  std::string reason = "fake unavailable";
  std::vector<ActivityBuffer> pending;
  std::int64_t dropped = 0;
  std::int64_t deviceOffsetNs = 0;
  std::vector<std::uint64_t> pushed;
  std::int64_t pops = 0;
  std::vector<std::uint64_t> stack;
  bool startCalled = false;
  bool stopCalled = false;
  std::int64_t starts = 0;
  std::int64_t flushes = 0;  ///< flush() and stop() calls: each forces the records out
  /// Called on every push (lets a test "launch" work while an id is pushed).
  std::function<void(std::uint64_t)> onPush;
  CuptiMode recordingMode = CuptiMode::Exact;
  std::string note;

  bool available() const override { return isAvailable; }
  std::string unavailableReason() const override { return isAvailable ? std::string() : reason; }
  bool start() override {
    startCalled = true;
    ++starts;
    return isAvailable;
  }
  void stop() override {  // the real source's stop flushes first
    stopCalled = true;
    ++flushes;
  }
  void flush() override { ++flushes; }
  std::vector<ActivityBuffer> takeBuffers() override { return std::exchange(pending, {}); }
  std::int64_t droppedRecords() const override { return dropped; }
  void pushExternalCorrelation(std::uint64_t id) override {
    pushed.push_back(id);
    stack.push_back(id);
    if (onPush) onPush(id);
  }
  void popExternalCorrelation() override {
    ++pops;
    if (!stack.empty()) stack.pop_back();
  }
  ClockSample clockSample(const std::function<std::int64_t()>& hostNowNs) override {
    const std::int64_t host = hostNowNs();
    return ClockSample{host + deviceOffsetNs, host};
  }
  CuptiMode mode() const override { return recordingMode; }
  std::string modeNote() const override { return note; }
};

}  // namespace pipeprof::test
