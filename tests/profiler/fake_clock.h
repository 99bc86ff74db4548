// A manual clock for tracer tests: time moves only when the test says so.
#pragma once

#include <pipeprof/profiler/host_tracer.h>

#include <atomic>

namespace pipeprof::test {

class FakeClock final : public Clock {
 public:
  TimeNs nowNs() const override { return now_.load(); }
  void set(TimeNs ns) { now_.store(ns); }
  void advance(TimeNs ns) { now_.fetch_add(ns); }

 private:
  std::atomic<TimeNs> now_{0};
};

}  // namespace pipeprof::test
