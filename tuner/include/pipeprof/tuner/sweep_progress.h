// What a sweep tells its caller while it runs: phases, candidates begun, measured, failed.
#pragma once

#include <pipeprof/core/units.h>

#include <cstdint>
#include <string>

namespace pipeprof::tuner {

/// The sweep's progress, reported as it happens; the CLI prints it (cli/progress_reporter.h),
/// a GUI could show it. Called from the sweep's thread only.
class SweepProgress {
 public:
  virtual ~SweepProgress() = default;

  /// The number of candidate rounds to measure (known once the search has ranked them).
  virtual void setTotal(std::int64_t total) = 0;
  /// A free-form phase message ("profiling mlp on cpu with 1 thread").
  virtual void phase(const std::string& message) = 0;
  /// Candidate (or reference pipeline) `label` starts a run.
  virtual void begin(const std::string& label) = 0;
  /// Step `done` of `steps` of the current run finished.
  virtual void step(std::int64_t done, std::int64_t steps) = 0;
  /// The current candidate's last round finished: its median step against its prediction.
  virtual void measured(const std::string& label, TimeNs measuredNs, TimeNs predictedNs) = 0;
  /// A round of the current candidate, not its last, finished.
  virtual void roundDone(const std::string& label, TimeNs medianSoFarNs) = 0;
  /// The current candidate failed with `error`.
  virtual void failed(const std::string& label, const std::string& error) = 0;
  /// Measuring ended (or stopped): later output starts afresh.
  virtual void finish() = 0;
};

/// Reports nothing (for tests and callers that do not show progress).
class SilentProgress : public SweepProgress {
 public:
  void setTotal(std::int64_t) override {}
  void phase(const std::string&) override {}
  void begin(const std::string&) override {}
  void step(std::int64_t, std::int64_t) override {}
  void measured(const std::string&, TimeNs, TimeNs) override {}
  void roundDone(const std::string&, TimeNs) override {}
  void failed(const std::string&, const std::string&) override {}
  void finish() override {}
};

}  // namespace pipeprof::tuner
