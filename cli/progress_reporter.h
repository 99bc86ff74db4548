// Sweep progress on stderr: one updating bar on a terminal, plain lines otherwise.
#pragma once

#include <pipeprof/core/units.h>
#include <pipeprof/tuner/sweep_progress.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace pipeprof::cli {

/// Reports candidate rounds done of total (one round per candidate unless the sweep
/// interleaves), the current candidate, elapsed and remaining time.
/// Writes only to the stream it is given (stderr), never to stdout.
class ProgressReporter : public tuner::SweepProgress {
 public:
  /// interactive: redraw one line with '\r' (a terminal); otherwise print one line per event.
  ProgressReporter(std::ostream& out, bool interactive, std::int64_t total);

  /// The number of candidate rounds to measure (known once the search has ranked them); the
  /// first call starts the clock the time left is estimated by (profiling and calibrating
  /// before it say nothing of how long a candidate takes).
  void setTotal(std::int64_t total) override;
  /// A free-form phase message ("profiling mlp on cpu with 1 thread").
  void phase(const std::string& message) override;
  /// Candidate (or reference) `label` starts measuring: "measuring [2,6] x8 never ..." (plain).
  void begin(const std::string& label) override;
  /// One step of the current candidate finished (updates the bar only).
  void step(std::int64_t done, std::int64_t steps) override;
  /// The current candidate was measured: "measured 3/12 [2,6] x8 except_last: 41.2 ms (predicted 39.8 ms)".
  void measured(const std::string& label, TimeNs measuredNs, TimeNs predictedNs) override;
  /// A round of the current candidate, not its last, finished: "partly measured 3/36 [2,6] x8
  /// never (round 1/3): 40.9 ms so far".
  void roundDone(const std::string& label, TimeNs medianSoFarNs) override;
  /// The current candidate failed: "failed 3/12 <label>: <error>".
  void failed(const std::string& label, const std::string& error) override;
  /// Ends the bar's line (interactive) so later output starts on a fresh line.
  void finish() override;

  /// True when stderr is a terminal.
  static bool stderrIsTerminal();

 private:
  void redraw();
  std::string timing() const;

  std::ostream& out_;
  bool interactive_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  std::string current_;
  std::string stepText_;
  std::chrono::steady_clock::time_point start_;
  std::optional<std::chrono::steady_clock::time_point> measuringStart_;
  bool lineOpen_ = false;
};

}  // namespace pipeprof::cli
