// When the measuring phase rewrites the sweep's report: often enough that a kill loses little,
// never so often that writing it takes a large share of the measuring.
#pragma once

#include <algorithm>

namespace pipeprof::tuner {

/// After a round the report is due kIntervalS after the last write ended (at once when a
/// candidate just finished), and never sooner than that write's own time over kWriteShare: a
/// write of w seconds makes the next one wait at least w / kWriteShare, so that writing takes at
/// most about kWriteShare of the measuring whatever the report's size. The default mlp sweep's
/// report (12,516 candidates, 14 MB) takes 0.2-0.5 s to write (bench/bench_report.cpp);
/// rewritten after every round it took half of that sweep's measuring, and every 2 s and after
/// each finished candidate still 52-57 writes in two minutes (docs/performance.md, "Writing the
/// report while measuring").
class ReportPace {
 public:
  static constexpr double kIntervalS = 2.0;
  static constexpr double kWriteShare = 0.05;

  /// Whether the report is due at `nowS` after a round; `candidateFinished`: that round's
  /// candidate is now measured or failed.
  bool due(double nowS, bool candidateFinished) const {
    return nowS - lastEndS_ >= std::max(candidateFinished ? 0.0 : kIntervalS, lastWriteS_ / kWriteShare);
  }

  /// The report was written from `startS` to `endS`.
  void wrote(double startS, double endS) {
    lastEndS_ = endS;
    lastWriteS_ = std::max(0.0, endS - startS);
  }

 private:
  double lastEndS_ = 0.0;    ///< when the last write ended (the sweep writes it before measuring: 0)
  double lastWriteS_ = 0.0;  ///< how long it took (0 until measuring wrote it once)
};

}  // namespace pipeprof::tuner
